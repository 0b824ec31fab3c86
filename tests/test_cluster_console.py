"""The console on a real local Ray cluster (tests/clusterkit.py: head "a" + raylet "b", each its own simulated
node): the GPUs pane has a section per node, `K` lists and kills the orphans of both nodes there, and a
killed raylet shows as UNREACHABLE with its last reading within 5 s."""

from __future__ import annotations

import os
import re
import signal
import time

from clusterkit import agent_state, cluster_plan, needs_ray, orphans_on, pid_state, running
from tuikit import drive, open_app, screen_text, until

from eagle_console.sim import gpustate, orphans

pytestmark = needs_ray
STEP = '  [[phase.step]]\n  id = "0.1"\n  title = "t"\n  run = "true"\n'


def _sections(app):
    from eagle_console.tui.panes.gpu_nodes import NodeSections

    return app.query_one(NodeSections)


# A reachable node's heading: `live`, or `read 4s ago` for a poll whose reading came late on a loaded machine
READ = r"(live|read \d+s ago)"


def test_gpus_pane_sections_and_k_kills_orphans_on_both_nodes(ray_cluster, tmp_path):
    from eagle_console.tui.screens.kill import KillScreen

    local = tmp_path / "local"
    gpustate.create_node(local, gpus=1)
    app, journal = open_app(cluster_plan(tmp_path, ray_cluster, STEP), sim_dir=local)

    async def scenario(pilot):
        sections = _sections(app)
        await until(pilot, lambda: sections.entries and all(e["gpus"] for e in sections.entries), timeout=60,
                    what="both nodes read")
        await until(pilot, lambda: all(str(pids[n][0]) in screen_text(app) for n in "ab"),
                    what="the orphans of both nodes in the GPUs pane")
        # a reading that took one poll too long reads "read 4s ago" for that poll (seen in a CI-like run, the
        # cluster up in 48 s): live is what the pane says while readings keep coming, so it is waited for
        await until(pilot, lambda: all(re.search(rf"node {n} · [\d.]+ · live", screen_text(app)) for n in "ab"),
                    timeout=30, what="both nodes live")
        await pilot.press("K")
        await until(pilot, lambda: isinstance(app.screen, KillScreen) and app.screen.state == "choosing",
                    timeout=60, what="the kill dialog's scan")
        screen = app.screen
        assert {f"a:{pids['a'][0]}", f"b:{pids['b'][0]}"} <= screen.selected  # orphans preselected
        plan_line = str(screen.query_one("#kill-plan").render())
        assert "node a GPU 0 1000 MiB" in plan_line and "node b GPU 0 1000 MiB" in plan_line, plan_line
        await pilot.press("enter")
        await until(pilot, lambda: screen.state == "done", timeout=60, what="the kill on both nodes")
        result = str(screen.query_one("#kill-progress").render())
        assert f"node a: killed 1: {pids['a'][0]}" in result and f"node b: killed 1: {pids['b'][0]}" in result, result
        summary = str(screen.query_one("#kill-summary").render())  # both nodes' kills counted (issue 26)
        assert re.match(r"after the kill: 2 killed · 2\d{3} MiB freed", summary), summary

    with orphans_on(ray_cluster) as pids:
        drive(app, scenario, size=(120, 50))
        assert not any(running(p[0]) for p in pids.values())
        assert gpustate.holders(ray_cluster.nodes["a"].sim) == [] and gpustate.holders(ray_cluster.nodes["b"].sim) == []
        kills = [e for e in journal.events() if e.kind == "kill"]
        assert sorted((e.data["node"], e.data["face"]) for e in kills) == [("a", "console"), ("b", "console")]


def test_a_killed_raylet_is_unreachable_in_the_gpus_pane_within_5s(ray_cluster, tmp_path):
    local = tmp_path / "local"
    gpustate.create_node(local, gpus=1)
    app, _ = open_app(cluster_plan(tmp_path, ray_cluster, STEP), sim_dir=local)
    seen: dict[str, float] = {}

    async def scenario(pilot):
        sections = _sections(app)
        await until(pilot, lambda: sections.entries and all(e["reachable"] for e in sections.entries), timeout=60,
                    what="both nodes read")
        raylet = ray_cluster.nodes["b"].raylet_pid()
        os.kill(raylet, signal.SIGKILL)
        killed = time.monotonic()
        try:
            await until(pilot, lambda: re.search(r"node b · [\d.]+ · UNREACHABLE", screen_text(app)), timeout=10,
                        what="node b unreachable")
        except AssertionError as exc:  # seen in suite runs: what the pane, its last read and the raylet said then
            text = screen_text(app)
            read = [{k: e.get(k) for k in ("name", "reachable", "error", "reading_age_s")} for e in sections.entries]
            raise AssertionError(f"{exc}; last read {read}; the raylet: {pid_state(raylet)}; "
                                 f"{agent_state(ray_cluster, 'b')}; "
                                 f"pane: {text[text.find('node b'):][:300]!r}") from None
        seen["after_s"] = time.monotonic() - killed
        why = next((e.get("error") for e in sections.entries if e.get("name") == "b"), None)
        print(f"[console] node b UNREACHABLE {seen['after_s']:.1f}s after its raylet's SIGKILL: {why}")
        text = screen_text(app)
        b = text[text.index("node b"):]
        assert "last reading" in b and b.count("/95.6") == 3, b  # its three GPUs from the last reading, dimmed
        assert re.search(rf"node a · [\d.]+ · {READ}", text), text  # a is read on, whatever b's fate
        # Ray 2.60's GCS drops the dead node from its table ~4 s after the kill: it stays listed here
        await pilot.pause(max(0.0, 8.0 - (time.monotonic() - killed)))
        assert re.search(r"node b · [\d.]+ · UNREACHABLE", screen_text(app)), screen_text(app)

    try:
        drive(app, scenario, size=(120, 50))
    finally:
        ray_cluster.restart("b")
    assert seen["after_s"] < 5.0, seen


CHILD = r'''
import json, sys
from pathlib import Path
from eagle_console.journal import Journal
from eagle_console.plan.loader import load_plan
from eagle_console.tui.app import make_app
from eagle_console.tui.panes.gpu_nodes import NodeSections

plan = load_plan(Path(sys.argv[1]))
app = make_app(plan, Journal.for_plan(plan), sim_dir=Path(sys.argv[2]))
seen = {}

def check():
    entries = app.query_one(NodeSections).entries
    if entries and all(n.get("gpus") for n in entries):
        seen["nodes"] = [n["name"] for n in entries]
        app.exit()

app.call_later(lambda: app.set_interval(0.2, check))
app.call_later(lambda: app.set_timer(60, app.exit))
app.run(headless=True, size=(120, 40))
print(json.dumps(seen))
'''


def test_a_console_run_for_real_reads_the_nodes(ray_cluster, tmp_path):
    """`App.run` (not `run_test`) puts Textual's print capture in sys.stdout/stderr, whose fileno() is -1;
    ray.init handed it to faulthandler and failed, so a real console never read a node."""
    import json
    import subprocess
    import sys

    local = tmp_path / "local"
    gpustate.create_node(local, gpus=1)
    plan = cluster_plan(tmp_path, ray_cluster, STEP)
    out = subprocess.run([sys.executable, "-c", CHILD, str(plan), str(local)], capture_output=True, text=True,
                         timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    assert json.loads(out.stdout.strip().splitlines()[-1]) == {"nodes": ["a", "b"]}, out.stdout + out.stderr[-2000:]


CONSOLE_STARTS = r'''
import sys
from pathlib import Path
from eagle_console.journal import Journal
from eagle_console.plan.loader import load_plan
from eagle_console.tui.app import make_app

plan = load_plan(Path(sys.argv[1]))
app = make_app(plan, Journal.for_plan(plan), sim_dir=Path(sys.argv[2]))
app.call_later(lambda: app.set_timer(1.0, lambda: app.confirm_and_start("0.2")))  # `r` on 0.2, as the key does
app.run(headless=True, size=(120, 40))
'''


def test_a_node_step_started_by_the_console_survives_its_kill_9_and_rollback_stops_it(ray_cluster, tmp_path):
    import subprocess
    import sys

    from clusterkit import cli, step_state
    from ray.job_submission import JobSubmissionClient

    from eagle_console.journal import Journal
    from eagle_console.plan.loader import load_plan

    local = tmp_path / "local"
    gpustate.create_node(local, gpus=1)
    plan = cluster_plan(tmp_path, ray_cluster, '  [[phase.step]]\n  id = "0.2"\n  title = "long on b"\n'
                                               '  node = "b"\n  run = "echo ACTION_PID=$$ SIM=$EAGLE_CONSOLE_SIM; '
                                               'exec sleep 300"\n')
    console = subprocess.Popen([sys.executable, "-c", CONSOLE_STARTS, str(plan), str(local)],
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 90
        while not (found := re.search(r"ACTION_PID=(\d+) SIM=(\S+)", cli("log", plan, "0.2").stdout)):
            assert time.monotonic() < deadline and console.poll() is None, "the console did not start 0.2"
            time.sleep(0.5)
        assert found.group(2) == str(ray_cluster.nodes["b"].sim)  # it runs on node b
        action = int(found.group(1))
    finally:
        console.kill()  # kill -9 of the console
        console.wait()
    time.sleep(2.0)
    journal = Journal.for_plan(load_plan(plan))
    run = journal.latest_run("0.2")
    assert step_state(plan, "0.2")[0] == "in_progress" and run.node == "b" and not run.finished
    assert str(JobSubmissionClient(ray_cluster.address).get_job_status(run.job_id)).endswith("RUNNING")
    assert running(action)
    r = cli("rollback", plan, "0.2", "--yes")
    assert r.returncode == 0, r.stdout + r.stderr
    assert step_state(plan, "0.2")[0] == "rolled_back"
    deadline = time.monotonic() + 20
    while running(action):
        assert time.monotonic() < deadline, "the action on node b still runs after the rollback"
        time.sleep(0.3)


def test_the_console_on_node_a_shows_and_kills_its_gpus_once(ray_cluster, tmp_path):
    """The console runs on node a (its GPUs are this machine's: the same UUIDs): node a is not listed again
    under the cluster, and K lists a's orphan once, as this machine's (the demo showed it twice)."""
    from eagle_console.tui.screens.kill import KillScreen

    orphan = orphans.leave_orphans(ray_cluster.nodes["a"].sim, count=1, mib=1000, gpus=[1])[0]
    app, _journal = open_app(cluster_plan(tmp_path, ray_cluster, STEP), sim_dir=ray_cluster.nodes["a"].sim)

    async def scenario(pilot):
        sections = _sections(app)
        await until(pilot, lambda: sections.entries and "node a is this machine" in screen_text(app), timeout=60,
                    what="node a recognised as this machine")
        text = screen_text(app)
        assert not re.search(rf"node a · [\d.]+ · {READ}", text) and re.search(rf"node b · [\d.]+ · {READ}", text), text
        assert text.count(str(orphan)) == 1, text
        await pilot.press("K")
        await until(pilot, lambda: isinstance(app.screen, KillScreen) and app.screen.state == "choosing",
                    timeout=60, what="the kill dialog's scan")
        keys = [f"{n}:{h.pid}" if n else str(h.pid) for n, h in app.screen.rows]
        assert keys.count(str(orphan)) == 1 and f"a:{orphan}" not in keys, keys
        await pilot.press("escape")

    try:
        drive(app, scenario, size=(120, 50))
    finally:
        if running(orphan):
            os.kill(orphan, signal.SIGKILL)


def test_k_on_node_a_counts_both_nodes_in_its_header_and_totals(ray_cluster, tmp_path):
    """Issue 26: the console on node a (as `demo --nodes 2`) kills one orphan here and one on node b; the
    summary said "1 killed · 1000 MiB" (this machine's record only) and the header "1 GPU holders"."""
    from eagle_console.tui.screens.kill import KillScreen

    app, _journal = open_app(cluster_plan(tmp_path, ray_cluster, STEP), sim_dir=ray_cluster.nodes["a"].sim)

    async def scenario(pilot):
        await until(pilot, lambda: "node a is this machine" in screen_text(app), timeout=60,
                    what="node a recognised as this machine")
        await pilot.press("K")
        await until(pilot, lambda: isinstance(app.screen, KillScreen) and app.screen.state == "choosing",
                    timeout=60, what="the kill dialog's scan")
        screen = app.screen
        assert {str(pids["a"][0]), f"b:{pids['b'][0]}"} <= screen.selected
        header = str(screen.query_one("#kill-summary").render())
        assert header.startswith(f"{len(screen.rows)} GPU holders (this machine 1, node b 1)"), header
        await pilot.press("enter")
        await until(pilot, lambda: screen.state == "done", timeout=60, what="the kill on both nodes")
        summary = str(screen.query_one("#kill-summary").render())
        local = screen.report.freed_total  # this machine's record; node b's MiB are on its own line
        node_b = float(re.search(r"node b: killed 1: \d+ · freed (\d+) MiB",
                                 str(screen.query_one("#kill-progress").render())).group(1))
        assert local >= 1000 and node_b >= 1000, (local, node_b)
        assert summary.startswith(f"after the kill: 2 killed · {local + node_b:.0f} MiB freed · "), summary

    with orphans_on(ray_cluster) as pids:
        drive(app, scenario, size=(120, 50))
        assert not any(running(p[0]) for p in pids.values())
