"""A link blip of a few seconds (6 s, or as long as a status read waits on the silent node) between the head and node b, on two hosts (tests/netnskit.py), with Ray's own
health-check settings (a node is declared dead only after several 3 s probes fail, `ray_config_def.h`
health_check_period_ms 3000 / timeout 10000 / failure_threshold 5), as on a real cluster. Before, the
console marked the running b step `lost` for good: Ray's "temporarily unavailable" (`ActorUnavailableError`)
is a `RayActorError`, which was taken for a dead node. Now the run is unknown while b is silent and
running again once b answers; `lost` is never written to the journal, and the step's action runs on."""

from __future__ import annotations

import json
import time

import netnskit
import pytest
from clusterkit import HAVE_RAY

from eagle_console.journal import Journal

pytestmark = [pytest.mark.netns, pytest.mark.skipif(not HAVE_RAY, reason="Ray is not installed")]
WHY_NOT = netnskit.skip_reason()
if WHY_NOT:
    pytestmark.append(pytest.mark.skip(reason=f"two hosts as network namespaces: {WHY_NOT}"))

FAST = netnskit.FAST


@pytest.fixture(scope="module")
def hosts():
    with netnskit.two_host_cluster(netnskit.RAY_DEFAULT_HEALTH) as net_and_cluster:
        yield net_and_cluster


def b1(net, plan) -> dict:
    done = net.cli("status", plan, "--json", timeout=60, env=FAST)
    assert done.returncode == 0, done.stderr
    return next(s for p in json.loads(done.stdout)["phases"] for s in p["steps"] if s["id"] == "b1")


def test_a_six_second_blip_leaves_the_b_step_unknown_then_running_never_lost(hosts):
    net, cluster = hosts
    folder = net.root / "blip"
    folder.mkdir()
    plan = folder / "plan.toml"
    plan.write_text(f'[plan]\nid = "blip"\ntitle = "blip"\n\n[cluster]\naddress = "{cluster.address}"\n\n'
                    '[[phase]]\nid = "0"\ntitle = "P"\n\n[[phase.step]]\nid = "b1"\ntitle = "long on b"\n'
                    'node = "b"\nrun = "echo ON-B; exec sleep 600"\nrollback = "true"\n')
    assert net.cli("run", plan, "b1", "--yes", timeout=120, env=FAST).returncode == 0
    deadline = time.monotonic() + 90
    while "ON-B" not in net.cli("log", plan, "b1", timeout=60, env=FAST).stdout:
        assert time.monotonic() < deadline, "b1 never started on b"
        time.sleep(1)
    net.b.link(False)
    cut = time.monotonic()
    try:  # down from 2 s before a status read until it returns: the blip lasts as long as the read waits on b
        time.sleep(2)
        during = b1(net, plan)
        time.sleep(max(0.0, 6 - (time.monotonic() - cut)))
    finally:
        net.b.link(True)
    print(f"[blip] link down for {time.monotonic() - cut:.1f}s")
    print(f"[blip] during the cut: {during['status']} {during['run'].get('node_note')!r}")
    assert during["status"] == "in_progress", during
    assert during["run"].get("node_unreachable") is True, during
    back = time.monotonic()
    while (after := b1(net, plan))["run"].get("node_unreachable"):
        assert time.monotonic() - back < 60, after
        time.sleep(1)
    print(f"[blip] b answers again {time.monotonic() - back:.1f}s after the link came back")
    assert after["status"] == "in_progress", after
    journal = Journal(folder / ".eagle-console" / "blip" / "journal.db", readonly=True)
    try:
        assert [r.outcome for r in journal.runs() if r.step_id == "b1"] == [None]  # never lost, still open
    finally:
        journal.close()
    undo = net.cli("rollback", plan, "b1", "--yes", timeout=120, env=FAST)
    assert undo.returncode == 0, undo.stdout + undo.stderr
    deadline = time.monotonic() + 90
    while b1(net, plan)["status"] != "rolled_back":  # stopped on b through its job, then undone there
        assert time.monotonic() < deadline, b1(net, plan)
        time.sleep(1)
    assert net.b.run(["pgrep", "-f", "^sleep 600"], timeout=30).stdout.split() == []  # stopped on b, where it ran
