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


@pytest.fixture(autouse=True, scope="module")
def _can_run_as_another_machine() -> None:
    if why := otherhost.usable():  # here, not at collection: each xdist worker collects every module
        pytest.skip(f"otherhost: {why}")

OTHER = "node-b-sim"


def on_b(args: list[str]) -> subprocess.CompletedProcess:
    return cli(args, lambda argv, **popen: otherhost.run(argv, OTHER, **popen))


def test_another_machine_leaves_this_ones_live_run_alone_and_k_here_spares_it(held_run):
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
    assert f"running on {here}" in text, text

    # here (node A): still live, its worker its own, and K kills nothing of it
    run = step_of(doc(["status", str(plan), "--json"]), "0.1")
    assert run["status"] == "in_progress" and run["run"]["supervisor_state"] == "running", run
    killed = doc(["orphans", str(plan), "--json", "--kill", "--yes", "--grace", "1s", "--sim", str(sim)])
    assert worker not in killed["killed"] and alive(worker), killed
    mine = [h for h in killed["holders"] if h["pid"] == worker]
    assert [(h["class"], h["owner"]) for h in mine] == [("tracked", "0.1")], killed


def test_another_machine_cannot_roll_back_this_ones_run(held_run):
    """A rollback on node B would stop a session by numbers that mean other processes there: refused,
    naming where the run is; on node A it stops the run."""
    plan, sim, worker = held_run
    refused = on_b(["rollback", str(plan), "0.1", "--yes", "--force"])
    assert refused.returncode != 0 and f"runs on {socket.gethostname()}" in refused.stderr, refused
    assert alive(worker)
    done = cli(["rollback", str(plan), "0.1", "--yes", "--force"])
    assert done.returncode == 0, done.stderr
