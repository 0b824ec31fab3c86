"""A second machine sharing the plan's folder (a home on NFS): its console must not judge this one's runs.

Before, a run recorded nothing of where it ran: a face on node B, reconciling, found the supervisor's pid
absent from its own process table and recorded node A's live run `lost` (its step failed); back on node A
the run's workers were then orphans of a lost run, and K killed a live job. Now a run records its machine
(its hostname), and only that machine judges, stops or rolls it back. The simulated node runs the CLI as
node B (eagle_console.sim.otherhost: its own pids, hostname and boot id; the files shared).
"""

from __future__ import annotations

import json
import socket
import subprocess

import pytest
from heldkit import cli, doc, step_of

from eagle_console.processes import alive
from eagle_console.sim import otherhost


@pytest.fixture(scope="module")
def node_b() -> None:
    if why := otherhost.usable():  # here, not at collection: each xdist worker collects every module
        pytest.skip(f"otherhost: {why}")

OTHER = "node-b-sim"


def on_b(args: list[str]) -> subprocess.CompletedProcess:
    return cli(args, lambda argv, **popen: otherhost.run(argv, OTHER, **popen))


def test_another_machine_leaves_this_ones_live_run_alone_and_k_here_spares_it(node_b, held_run):
    plan, sim, worker = held_run
    here = socket.gethostname()
    # node B reconciles (`next` writes what it finds), then looks
    nxt = on_b(["next", str(plan), "--yes"])
    assert nxt.returncode in (0, 1), nxt.stderr
    seen = on_b(["status", str(plan), "--json"])
    run = step_of(json.loads(seen.stdout), "0.1")
    assert run["status"] == "in_progress" and run["run"]["ended"] is None, run
    assert run["run"]["host"] == here and run["run"]["supervisor_state"] is None, run
    text = on_b(["status", str(plan)]).stdout
    assert f"running on {here}" in text and "mark the step (eagle-console mark)" in text, text

    # here (node A): still live, its worker its own, and K kills nothing of it
    run = step_of(doc(["status", str(plan), "--json"]), "0.1")
    assert run["status"] == "in_progress" and run["run"]["supervisor_state"] == "running", run
    killed = doc(["orphans", str(plan), "--json", "--kill", "--yes", "--grace", "1s", "--sim", str(sim)])
    assert worker not in killed["killed"] and alive(worker), killed
    mine = [h for h in killed["holders"] if h["pid"] == worker]
    assert [(h["class"], h["owner"]) for h in mine] == [("tracked", "0.1")], killed


def test_another_machine_cannot_roll_back_this_ones_run(node_b, held_run):
    """A rollback on node B would stop a session by numbers that mean other processes there: refused,
    naming where the run is; on node A it stops the run."""
    plan, sim, worker = held_run
    refused = on_b(["rollback", str(plan), "0.1", "--yes", "--force"])
    assert refused.returncode != 0 and f"runs on {socket.gethostname()}" in refused.stderr, refused
    assert "gone for good (a container that ended), mark the step (eagle-console mark)" in refused.stderr
    assert alive(worker)
    done = cli(["rollback", str(plan), "0.1", "--yes", "--force"])
    assert done.returncode == 0, done.stderr


def test_the_console_names_another_machines_run_and_never_ends_it(tmp_path):
    """The console, polling and reconciling every 3 s, leaves a run whose supervisor is another machine's in
    progress and says where it runs; before, its first reconcile recorded the run lost."""
    import asyncio

    from enginekit import write_plan
    from tuikit import drive, open_app, select, until

    from eagle_console.journal import Journal
    from eagle_console.plan.loader import load_plan

    plan = write_plan(tmp_path, '[[phase]]\nid = "0"\ntitle = "p"\n\n  [[phase.step]]\n  id = "0.1"\n'
                                '  title = "serve"\n  run = ["sleep", "60"]\n')
    boot = "00000000-0000-4000-8000-00000000000b"  # node A's boot: none of its processes can be here
    writer = Journal.for_plan(load_plan(plan))  # as node A's supervisor records itself
    run_id = writer.begin_run("0.1", command="sleep 60", log=None)
    writer.record_proc(run_id, "0.1", supervisor_pid=4321, supervisor_ctime=f"100@{boot}", host=OTHER)
    writer.record_proc(run_id, "0.1", pid=4322, pid_ctime=f"101@{boot}", pgid=4322, sid=4322)
    writer.close()
    app, journal = open_app(plan)

    def detail() -> str:
        return app.query_one("#detail").render().plain

    async def scenario(pilot):
        await select(pilot, "0.1")
        await until(pilot, lambda: f"pid 4322 on {OTHER} (not this machine)" in detail(),
                    what="where it runs")
        await asyncio.sleep(3.5)  # past the console's reconcile (workers.RECONCILE_S); it runs first at once
        assert journal.statuses()["0.1"] == "in_progress" and journal.run(run_id).ended is None, detail()

    drive(app, scenario)
    journal.close()
