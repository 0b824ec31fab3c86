"""Multi-node SGLang through Ray (real local cluster, tests/clusterkit.py): the demo plan's 2-node server step.

The plan has `[cluster]`, so the step picks the Ray runner by itself: each rank is a Ray job on its node
(its schedulers hold memory in that node's sim dir, which only that raylet's environment names). Rollback
stops both ranks and frees both nodes; a rank 1 killed on node b makes the service stop rank 0 and fail
the run with RANK_EXITED (sglang#3099).
"""

from __future__ import annotations

import os
import signal

import pytest
from clusterkit import cli, needs_ray
from enginekit import engine_for, wait_for

from eagle_console.demo.multinode import build_nodes, write_plan
from eagle_console.sglang.multinode_run import load_ranks
from eagle_console.sim import gpustate

pytestmark = needs_ray


def held_gpus(sim) -> set[int]:
    return {g for h in gpustate.holders(sim) for g in h.mib}


@pytest.fixture
def demo_plan(tmp_path, ray_cluster, monkeypatch):
    """The demo's plan on the session's cluster (node a: 2 GPUs, b: 3): tp 4, two schedulers per node."""
    monkeypatch.setenv("EAGLE_CONSOLE_KILL_GRACE", "6")
    build_nodes(tmp_path, 2, orphans=0)  # the models and drafters; the nodes are the cluster's
    plan = write_plan(tmp_path, ["a", "b"], cluster=ray_cluster.address, tp=4, token_path=ray_cluster.token_path)
    # tp 4 over two nodes instead of the demo's 16: smaller weights, so 2 GPUs per node hold them
    plan.write_text(plan.read_text().replace("[env]\n", '[env]\nEAGLE_SIM_WEIGHTS_GIB = "40"\n', 1))
    sims = {n: ray_cluster.nodes[n].sim for n in ("a", "b")}
    yield plan, sims
    cli("rollback", plan, "0.1", "--yes", timeout=180)  # a failed assertion leaves no rank running
    wait_for(lambda: not held_gpus(sims["a"]) and not held_gpus(sims["b"]), timeout=30)


def ranks_of(plan):
    records = list(plan.parent.parent.rglob("ranks.json"))
    assert records, "the ranks service recorded no ranks.json"
    return load_ranks(records[0].parent)


def job_status(address: str, job_id: str) -> str:
    from eagle_console.cluster.jobs import job_client

    return str(job_client(address).get_job_status(job_id))


def test_two_node_server_runs_as_ray_jobs_and_rollback_stops_both(demo_plan, ray_cluster):
    plan, sims = demo_plan
    out = cli("run", plan, "0.1", "--wait", timeout=240)
    assert out.returncode == 0, out.stdout + out.stderr
    eng = engine_for(plan)
    run = eng.journal.latest_run("0.1")
    assert eng.journal.statuses()["0.1"] == "completed" and run.ready_at
    ranks = ranks_of(plan)
    assert [(r.rank, r.node) for r in ranks] == [(0, "a"), (1, "b")]
    assert all(r.ref.get("job_id") for r in ranks), "the ranks were not started as Ray jobs"
    # each rank holds memory in its own node's sim dir: it ran under that raylet's environment
    assert held_gpus(sims["a"]) == {0, 1} and held_gpus(sims["b"]) == {0, 1}
    log = open(run.log).read()
    from eagle_console.cluster.connect import cluster_nodes

    a = next(n.address for n in cluster_nodes(ray_cluster.address) if n.name == "a")  # as Ray knows node a
    assert f"--nnodes 2 --node-rank 1 --dist-init-addr {a}:" in log
    # rank 0's job log, copied here (about once a second), is the step log
    wait_for(lambda: "The server is fired up" in open(run.log).read(), timeout=15)
    wait_for(lambda: "node rank 1: joining" in open(ranks[1].log).read(), timeout=10)  # its job log, here

    out = cli("rollback", plan, "0.1", "--yes", timeout=180)
    assert out.returncode == 0, out.stdout + out.stderr
    assert engine_for(plan).journal.statuses()["0.1"] == "rolled_back"
    assert [job_status(ray_cluster.address, r.ref["job_id"]) for r in ranks] == ["STOPPED", "STOPPED"]
    wait_for(lambda: held_gpus(sims["a"]) == set() and held_gpus(sims["b"]) == set(), timeout=20)


def test_rank1_killed_on_node_b_stops_rank0_and_fails_the_run(demo_plan, ray_cluster):
    from eagle_console.cluster.noderunner import RayRunner

    plan, sims = demo_plan
    out = cli("run", plan, "0.1", "--wait", timeout=240)
    assert out.returncode == 0, out.stdout + out.stderr
    ranks = ranks_of(plan)
    rank1 = RayRunner(ray_cluster.address).rank_pid(ranks[1])
    assert rank1 and rank1["pid"], "rank 1's job did not report its pid"
    os.kill(rank1["pid"], signal.SIGKILL)  # node b's launcher dies; its schedulers would stay, holding memory
    wait_for(lambda: engine_for(plan).journal.statuses()["0.1"] == "failed", timeout=60)
    run = engine_for(plan).journal.latest_run("0.1")
    log = open(run.log).read()
    assert "RANK_EXITED: rank 1 on node b" in log and "sglang#3099" in log
    wait_for(lambda: all(job_status(ray_cluster.address, r.ref["job_id"]) in ("STOPPED", "FAILED")
                         for r in ranks), timeout=60)
    wait_for(lambda: held_gpus(sims["a"]) == set() and held_gpus(sims["b"]) == set(), timeout=30)


def test_a_plan_with_cluster_picks_the_ray_runner_by_itself(tmp_path, ray_cluster):
    """No EAGLE_CONSOLE_NODE_RUNNER needed: [cluster] puts its address in every action's env; the ranks get
    the plan's env keys, never the node's sim dir from here."""
    from clusterkit import cluster_plan

    from eagle_console.cluster.noderunner import RayRunner
    from eagle_console.engine.builtins.sglang_ranks import node_runner as runner_from_env
    from eagle_console.engine.runner import action_env
    from eagle_console.plan.loader import load_plan
    from eagle_console.sglang.noderunner import LocalRunner

    path = cluster_plan(tmp_path, ray_cluster, '  [[phase.step]]\n  id = "0.1"\n  title = "t"\n  run = "true"\n')
    path.write_text(path.read_text().replace("[[phase]]", '[env]\nNCCL_SOCKET_IFNAME = "eth0"\n\n[[phase]]', 1))
    plan = load_plan(path)
    env = action_env(plan, plan.step("0.1"))
    runner = runner_from_env({**env, "EAGLE_CONSOLE_SIM": "/elsewhere", "HOME": "/root"})
    assert isinstance(runner, RayRunner) and runner.forward == {"NCCL_SOCKET_IFNAME": "eth0"}
    assert runner.path_exists("b", str(ray_cluster.nodes["b"].sim)) and not runner.path_exists("b", "/no/such")
    assert isinstance(runner_from_env({}), LocalRunner)  # no [cluster]: the local runner, Ray untouched


def test_every_rank_of_a_two_node_server_is_tracked_by_its_step_on_both_nodes(demo_plan, ray_cluster, tmp_path):
    """Issue 26: each rank runs in a session of its own on its node (its Ray job's), so its schedulers were
    `other`, owner none, on both nodes: in `orphans PLAN` and in the console's GPUs pane, on the node that is
    this machine (its local scan) and on the others (their agents)."""
    import json

    from tuikit import drive, open_app, until

    from eagle_console.tui.panes.gpu_nodes import NodeSections

    plan, sims = demo_plan
    out = cli("run", plan, "0.1", "--wait", timeout=240)
    assert out.returncode == 0, out.stdout + out.stderr
    schedulers = {n: sorted(h.pid for h in gpustate.holders(sims[n])) for n in ("a", "b")}
    assert all(len(p) == 2 for p in schedulers.values()), schedulers

    def classes(holders):
        return {h["pid"]: (h["class"], h["owner"]) for h in holders}

    tracked = {n: {pid: ("tracked", "0.1") for pid in schedulers[n]} for n in ("a", "b")}
    # the CLI on node a: a's holders by this machine's scan, b's by its agent
    doc = json.loads(cli("orphans", plan, "--sim", sims["a"], "--json").stdout)
    assert doc["nodes"]["a"]["this_machine"], doc["nodes"]
    assert classes(doc["holders"]) == tracked["a"], doc["holders"]
    assert classes(doc["nodes"]["b"]["holders"]) == tracked["b"], doc["nodes"]["b"]
    # the CLI on no node of the cluster: both nodes' holders by their agents
    elsewhere = tmp_path / "elsewhere"
    gpustate.create_node(elsewhere, gpus=1)
    doc = json.loads(cli("orphans", plan, "--sim", elsewhere, "--json").stdout)
    assert {n: classes(doc["nodes"][n]["holders"]) for n in ("a", "b")} == tracked, doc["nodes"]

    app, _journal = open_app(plan, sim_dir=sims["a"])  # the console on node a, as `demo --nodes 2` runs it
    seen = {}

    async def scenario(pilot):
        sections = app.query_one(NodeSections)
        await until(pilot, lambda: app.ctx.gpus is not None and any(e.get("holders") for e in sections.entries),
                    timeout=60, what="this machine's GPUs and node b's holders read")
        seen["a"] = {h.pid: (h.cls, h.owner) for h in app.ctx.gpus.holders}
        seen["b"] = classes(next(e for e in sections.entries if e["name"] == "b")["holders"])

    drive(app, scenario, size=(120, 50))
    assert seen == tracked, seen
