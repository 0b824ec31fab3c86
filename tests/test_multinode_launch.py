"""A 2-rank simulated SGLang launch through the engine and the local NodeRunner: real processes, two sim nodes.

Ready on rank 0 with both nodes' GPUs held; rollback stops both ranks and frees both nodes; a rank 1 that
dies makes the watcher stop rank 0 (which would otherwise keep serving: sglang#3099) and fails the run.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys

import pytest
from enginekit import engine_for, wait_for
from multinodekit import make_nodes, multinode_plan

from eagle_console.ports import free_port
from eagle_console.processes import alive
from eagle_console.sglang.multinode_run import load_ranks
from eagle_console.sim import gpustate


def cli(*args: str, timeout: float = 120) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "eagle_console", *args], capture_output=True, text=True,
                          timeout=timeout)


@pytest.fixture
def two_nodes(tmp_path, monkeypatch):
    monkeypatch.setenv("EAGLE_CONSOLE_KILL_GRACE", "4")
    nodes_file, sims = make_nodes(tmp_path)
    port, dist = free_port(), free_port()
    path = multinode_plan(tmp_path, nodes_file, port, dist)
    yield path, sims, port
    from eagle_console.processes import stop_session

    for run in engine_for(path).journal.runs():
        if run.sid:
            stop_session(run.sid, run.pgid, 1.0)
    for record in tmp_path.rglob("ranks.json"):  # a failed assertion leaves no rank behind
        for r in load_ranks(record.parent):
            stop_session(r.ref["pid"], r.ref["pid"], 1.0, leader_start=r.ref["ctime"])


def ranks_of(path):
    eng = engine_for(path)
    run = eng.journal.latest_run("0.1")
    artifacts = [p for p in path.parent.rglob("ranks.json")]
    assert artifacts, "the ranks service recorded no ranks.json"
    return eng, run, load_ranks(artifacts[0].parent)


def nccl_pane_summary(path) -> dict:
    """The NCCL pane over the multi-node service 0.1 (the real pane in App.run_test): its summary."""
    import asyncio

    from textual.app import App
    from tuikit import until

    from eagle_console.journal import Journal
    from eagle_console.plan.loader import load_plan
    from eagle_console.tui.context import ConsoleContext
    from eagle_console.tui.panes.nccl import NcclPane

    plan = load_plan(path)
    ctx = ConsoleContext(plan_path=path, plan=plan, journal=Journal.for_plan(plan), selected_step_id="0.1")
    seen: dict = {}

    class PaneApp(App):
        def compose(self):
            yield NcclPane(ctx)

    async def main() -> None:
        app = PaneApp()
        async with app.run_test(size=(120, 40)) as pilot:
            pane = app.query_one(NcclPane)
            await until(pilot, lambda: pane.summary and pane.summary.get("init_complete") == 4, timeout=20,
                        what="the merged NCCL summary")
            assert "2 nodes (a, b)" in str(pane.head.render())
            seen.update(pane.summary)

    asyncio.run(main())
    return seen


def held_gpus(sim) -> set[int]:
    return {g for h in gpustate.holders(sim) for g in h.mib}


def test_two_rank_launch_ready_then_rollback_frees_both_nodes(two_nodes):
    path, sims, port = two_nodes
    out = cli("run", str(path), "0.1", "--wait")
    assert out.returncode == 0, out.stdout + out.stderr
    eng, run, ranks = ranks_of(path)
    assert eng.journal.statuses()["0.1"] == "completed" and run.ready_at
    assert [(r.rank, r.node) for r in ranks] == [(0, "a"), (1, "b")]
    assert held_gpus(sims["a"]) == {0, 1} and held_gpus(sims["b"]) == {0, 1}  # tp 4 = 2 GPUs per node
    log = open(run.log).read()
    assert "--nnodes 2 --node-rank 1 --dist-init-addr 127.0.0.1:" in log
    # rank 0's output is the step log; SGLang marks the server Up before it logs "fired up"
    # (http_server._wait_and_warmup), so the readiness probe can pass an instant before the line lands
    wait_for(lambda: "The server is fired up" in open(run.log).read(), timeout=15)

    out = cli("nccl", "--service", str(path), "0.1", "--json")  # the ranks' logs of both nodes, merged
    doc = json.loads(out.stdout)
    assert doc["nnodes"] == 2 and doc["node_ranks"] == {"a": [0, 1], "b": [2, 3]}
    assert doc["hosts"] == ["sim-a", "sim-b"] and doc["init_complete"] == 4
    assert "NET_SOCKET_INTER_NODE" in [f["code"] for f in doc["findings"]]
    pane_summary = nccl_pane_summary(path)  # the console's NCCL pane: the same merged diagnosis
    assert pane_summary["nnodes"] == 2 and pane_summary["node_ranks"] == {"a": [0, 1], "b": [2, 3]}
    assert pane_summary["init_complete"] == 4
    assert "NET_SOCKET_INTER_NODE" in [f["code"] for f in pane_summary["findings"]]

    out = cli("rollback", str(path), "0.1", "--yes")
    assert out.returncode == 0, out.stdout + out.stderr
    assert eng.journal.statuses()["0.1"] == "rolled_back"
    assert all(not alive(r.ref["pid"], r.ref["ctime"]) for r in ranks)
    assert held_gpus(sims["a"]) == set() and held_gpus(sims["b"]) == set()


def test_rank1_killed_stops_rank0_and_fails_the_run(two_nodes):
    path, sims, port = two_nodes
    out = cli("run", str(path), "0.1", "--wait")
    assert out.returncode == 0, out.stdout + out.stderr
    eng, run, ranks = ranks_of(path)
    rank1 = next(r for r in ranks if r.rank == 1)
    os.kill(rank1.ref["pid"], signal.SIGKILL)  # node b's launcher dies; its schedulers stay, holding memory
    wait_for(lambda: engine_for(path).journal.statuses()["0.1"] == "failed", timeout=40)
    rank0 = next(r for r in ranks if r.rank == 0)
    wait_for(lambda: not alive(rank0.ref["pid"], rank0.ref["ctime"]), timeout=20)
    log = open(run.log).read()
    assert "RANK_EXITED: rank 1 on node b" in log and "sglang#3099" in log
    wait_for(lambda: held_gpus(sims["a"]) == set() and held_gpus(sims["b"]) == set(), timeout=20)
