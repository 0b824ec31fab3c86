"""Multi-node `sglang.server` before launch: the ranks' command lines, and the preflight through the runner.

The preflight runs in the real action process of a real run: a drafter missing on node b, or a node with two
interfaces and no NCCL_SOCKET_IFNAME / GLOO_SOCKET_IFNAME (sglang#958), refuses the launch with nothing started.
"""

from __future__ import annotations

import subprocess
import sys

from enginekit import engine_for
from multinodekit import make_nodes, multinode_plan

from eagle_console.ports import free_port
from eagle_console.sglang.multinode import (
    NodeFacts,
    dist_init_addr,
    multinode_problems,
    nccl_interfaces,
    preflight,
    rank_launches,
)


def run_step(path) -> tuple[int, str]:
    out = subprocess.run([sys.executable, "-m", "eagle_console", "run", str(path), "0.1", "--wait"],
                         capture_output=True, text=True, timeout=120)
    run = engine_for(path).journal.latest_run("0.1")
    return out.returncode, open(run.log).read()


def test_rank_launches_give_each_node_its_rank_and_rank0s_address():
    base = ["python3", "-m", "sglang.launch_server", "--model-path", "/m", "--tp-size", "16"]
    launches = rank_launches(base, ["a", "b"], "10.0.0.5", 20000)
    assert [(r.node, r.rank) for r in launches] == [("a", 0), ("b", 1)]
    assert launches[1].argv[-6:] == ["--nnodes", "2", "--node-rank", "1", "--dist-init-addr", "10.0.0.5:20000"]
    assert dist_init_addr("fd00::1", 20000) == "[fd00::1]:20000"


def test_with_table_problems():
    assert multinode_problems({"nodes": ["a"], "tp": 2})[0].startswith("`nodes` needs two")
    assert "does not divide" in multinode_problems({"nodes": ["a", "b", "c"], "tp": 8})[0]
    assert multinode_problems({"nodes": ["a", "b"], "tp": 8, "dist_port": 20001}) == []


def test_interfaces_count_as_nccl_does():
    facts = [NodeFacts("a", (), ("lo", "docker0", "eth0"), {}),
             NodeFacts("b", (), ("lo", "eth0", "ib0"), {"NCCL_SOCKET_IFNAME": "ib0"})]
    found = preflight(facts)
    assert [f.code for f in found] == ["NODE_IFNAME_UNSET"]  # a: lo and docker* never compete
    assert "node b" in found[0].message and "GLOO_SOCKET_IFNAME" in found[0].message
    assert "NCCL_SOCKET_IFNAME /" not in found[0].message


def test_ifname_is_matched_by_nccls_rules():
    """NCCL 2.30.7 src/os/linux.cc ncclOsFindInterfaces + src/misc/utils.cc matchIfList."""
    up = ["lo", "eth0", "eth1", "ens5", "ib0"]
    assert nccl_interfaces("eth", up) == ["eth0", "eth1"]  # a prefix
    assert nccl_interfaces("=eth", up) == []  # `=`: exact names
    assert nccl_interfaces("=eth1,ib0", up) == ["eth1", "ib0"]
    assert nccl_interfaces("^eth,lo", up) == ["ens5", "ib0"]  # `^`: all but these
    assert nccl_interfaces("^=eth0", up) == ["lo", "eth1", "ens5", "ib0"]
    assert nccl_interfaces("ens5:1,", up) == ["ens5"]  # `:port` is not part of the name; empty entries skipped


def test_an_ifname_no_interface_of_the_node_matches_is_an_error():
    facts = [NodeFacts("a", (), ("lo", "eth0"), {"NCCL_SOCKET_IFNAME": "eth", "GLOO_SOCKET_IFNAME": "eth0"}),
             NodeFacts("b", (), ("lo", "ens5"), {"NCCL_SOCKET_IFNAME": "eth0", "GLOO_SOCKET_IFNAME": "eth0"})]
    found = preflight(facts)
    assert [(f.code, f.message.split(":")[0]) for f in found] == [("NODE_IFNAME_MISSING", "node b")] * 2, found
    assert "NCCL_SOCKET_IFNAME='eth0' matches none of its interfaces that are up (lo, ens5)" in found[0].message
    assert "GLOO_SOCKET_IFNAME='eth0' names eth0" in found[1].message
    # Gloo takes exact names only: a prefix that NCCL accepts is not one for Gloo
    assert [f.message for f in preflight([NodeFacts("b", (), ("lo", "eth0"), {"GLOO_SOCKET_IFNAME": "eth"})])]
    assert preflight([NodeFacts("b", (), ("lo", "ens5"), {"NCCL_SOCKET_IFNAME": "^docker"})]) == []


def test_drafter_missing_on_node_b_refuses_the_launch(tmp_path):
    model = tmp_path / "models" / "Kimi-K2.5"
    drafter = tmp_path / "drafters" / "k25-eagle3"
    drafter.mkdir(parents=True)
    b_root = tmp_path / "b-root"  # node b's files: the model is there, the drafter is not
    (b_root / str(model).lstrip("/")).mkdir(parents=True)
    nodes_file, sims = make_nodes(tmp_path, roots={"b": b_root})
    path = multinode_plan(tmp_path, nodes_file, free_port(), free_port(), extra_with=(
        f'draft = "{drafter}"\n            speculative = {{ algorithm = "EAGLE3" }}'))
    rc, log = run_step(path)
    assert rc == 1
    assert f"NODE_PATH_MISSING: node b: {drafter} does not exist there" in log
    assert "node a:" not in log and "nothing launched" in log
    assert not list(tmp_path.rglob("ranks.json"))


def test_two_interfaces_without_ifname_refuse_then_ifname_set_passes_preflight(tmp_path):
    nodes_file, _ = make_nodes(tmp_path, interfaces={"b": ["lo", "eth0", "eth1"]})
    path = multinode_plan(tmp_path, nodes_file, free_port(), free_port())
    rc, log = run_step(path)
    assert rc == 1
    assert "NODE_IFNAME_UNSET: node b has 2 network interfaces (eth0, eth1)" in log
    assert "sglang#958" in log

    fixed = tmp_path / "fixed"
    fixed.mkdir()
    nodes_file, _ = make_nodes(fixed, interfaces={"b": ["lo", "eth0", "eth1"]})
    path = multinode_plan(fixed, nodes_file, free_port(), free_port(),
                          env='NCCL_SOCKET_IFNAME = "eth0"\n        GLOO_SOCKET_IFNAME = "eth0"')
    out = subprocess.run([sys.executable, "-m", "eagle_console", "run", str(path), "0.1", "--wait"],
                         capture_output=True, text=True, timeout=120)
    try:
        assert out.returncode == 0, out.stdout + out.stderr
        assert "preflight passed on nodes a, b" in open(engine_for(path).journal.latest_run("0.1").log).read()
    finally:
        subprocess.run([sys.executable, "-m", "eagle_console", "rollback", str(path), "0.1", "--yes"],
                       capture_output=True, timeout=120)


def test_ifname_set_to_an_interface_node_b_lacks_refuses_the_launch(tmp_path):
    """`NCCL_SOCKET_IFNAME="eth0"` on a host whose interface is ens5 passed the preflight, and every rank failed."""
    nodes_file, _ = make_nodes(tmp_path, interfaces={"b": ["lo", "ens5"]})
    path = multinode_plan(tmp_path, nodes_file, free_port(), free_port(),
                          env='NCCL_SOCKET_IFNAME = "eth0"\n        GLOO_SOCKET_IFNAME = "eth0"')
    rc, log = run_step(path)
    assert rc == 1, log
    assert "NODE_IFNAME_MISSING: node b: NCCL_SOCKET_IFNAME='eth0' matches none of its interfaces" in log, log
    assert "node a:" not in log and "nothing launched" in log
