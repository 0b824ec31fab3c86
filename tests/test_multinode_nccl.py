"""The NCCL diagnosis of a multi-node server: several nodes' logs merged into one.

The logs are what the simulated server's ranks print (NCCL 2.28's INFO forms: nNodes, NET/Socket [send] and
[receive]); the hosts of both nodes have the same name, as two containers called `localhost` (or two sim
nodes on one machine) do: fed as one log, the inter-node socket connections read as NET inside one host.
"""

from __future__ import annotations

import json
import subprocess
import sys

from eagle_console.parse.nccl import summarize
from eagle_console.parse.nccl_merge import merge_nccl
from eagle_console.sim import server_logs


def node_log(node_rank: int, tp_per_node: int = 2, nnodes: int = 2) -> list[str]:
    nranks = tp_per_node * nnodes
    devs = list(range(tp_per_node))
    lines = []
    for rank in range(node_rank * tp_per_node, (node_rank + 1) * tp_per_node):
        lines += server_logs.nccl_lines(rank, nranks, devs, {}, f"0x{0x55d0a000 + rank * 0x1000:x}", "0x1234",
                                        nnodes)
    return lines


def codes(summary) -> list[str]:
    return [f["code"] for f in summary["findings"]]


def test_merge_keeps_same_named_hosts_of_two_nodes_apart(monkeypatch):
    monkeypatch.delenv("EAGLE_CONSOLE_SIM", raising=False)
    a, b = node_log(0), node_log(1)
    assert any("nNodes 2" in line for line in a) and any("[receive] via NET/Socket/0" in line for line in b)
    as_one = summarize(a + b)
    assert "NET_INTRA_NODE" in codes(as_one)  # what a plain concatenation wrongly concludes

    merged = merge_nccl([("a", a), ("b", b)])
    assert "NET_INTRA_NODE" not in codes(merged)
    assert merged["nnodes"] == 2 and merged["ranks"] == 4 and merged["init_complete"] == 4
    assert merged["node_ranks"] == {"a": [0, 1], "b": [2, 3]}
    assert len(merged["hosts"]) == 2 and merged["hosts"][1].endswith("@b")
    assert merged["transports"]["NET"] > 0 and merged["transports"]["P2P"] > 0
    found = {f["code"]: f for f in merged["findings"]}
    assert "1→2" in found["NET_SOCKET_INTER_NODE"]["message"] and "3→0" in found["NET_SOCKET_INTER_NODE"]["message"]


def test_one_node_of_two_is_said(monkeypatch):
    monkeypatch.delenv("EAGLE_CONSOLE_SIM", raising=False)
    merged = merge_nccl([("a", node_log(0))])
    assert {"INIT_INCOMPLETE", "NODES_MISSING"} <= set(codes(merged))


def test_cli_merges_node_logs(tmp_path, monkeypatch):
    monkeypatch.delenv("EAGLE_CONSOLE_SIM", raising=False)
    (tmp_path / "a.log").write_text("\n".join(node_log(0)) + "\n")
    (tmp_path / "b.log").write_text("\n".join(node_log(1)) + "\n")
    out = subprocess.run([sys.executable, "-m", "eagle_console", "nccl", "--node", f"a={tmp_path / 'a.log'}",
                          "--node", f"b={tmp_path / 'b.log'}", "--json"], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    doc = json.loads(out.stdout)
    assert doc["nnodes"] == 2 and doc["node_ranks"] == {"a": [0, 1], "b": [2, 3]}
    assert "NET_INTRA_NODE" not in codes(doc)
    bad = subprocess.run([sys.executable, "-m", "eagle_console", "nccl"], capture_output=True, text=True, timeout=60)
    assert bad.returncode == 2 and "--service PLAN STEP" in bad.stderr
