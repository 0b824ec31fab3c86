"""Kills never hit eagle-console itself (issue #15): a `gpu.kill` with a scope that matches every Python
process, run by `eagle-console run --wait` while a console is open, kills the sim workers and spares the
CLI, the supervisor, the console and the live jobs of the console's terminal. Also `orphans --kill` and tracked
processes, and `orphans --json` on a backend error."""

from __future__ import annotations

import json
import os
import pty
import subprocess
import sys
import threading
from pathlib import Path

import psutil
import pytest
from enginekit import engine_for, wait_for, write_plan
from test_tui_panes_gpus import stop_pids

from eagle_console.journal import Journal
from eagle_console.node.kill import LIVE_JOB, MAYBE_LIVE_JOB
from eagle_console.node.procs import eagle_console_kind
from eagle_console.ops.orphans import KillRecord, journal_supervisors
from eagle_console.processes import start_of
from eagle_console.sim import gpustate
from eagle_console.sim.orphans import leave_orphans

HOLD_ENV = "EAGLE_TEST_HOLD_GPU"
# Imported by every Python started with this folder on PYTHONPATH: with HOLD_ENV set, the process holds
# 100 MiB of sim GPU 0 (opens its device files), as a console with NVML open does on the real node.
SITECUSTOMIZE = f"""
import os
_spec = os.environ.get({HOLD_ENV!r})
if _spec:
    from eagle_console.sim import gpustate
    gpustate.hold(_spec, {{0: 100.0}})
"""


def session_reason() -> str:
    """A session led from outside this PID namespace (CI's `docker exec`, `unshare --pid`) reads as 0."""
    return (MAYBE_LIVE_JOB if os.getsid(0) == 0 else LIVE_JOB).format(ppid=os.getpid())


KILL_EVERYTHING_PLAN = """
    [[phase]]
    id = "0"
    title = "P"
      [[phase.step]]
      id = "0.1"
      title = "Kill every Python on the GPUs"
      uses = "gpu.kill"
      with = { scope = "match", match = ["eagle_console|sglang|python"], grace = "1s" }
      confirm = false
"""
HOLDER_CODE = ("import signal, sys\nfrom eagle_console.sim import gpustate\n"
               "gpustate.hold(sys.argv[1], {{{gpu}: {mib}}})\nprint('up', flush=True)\nsignal.pause()")


@pytest.fixture
def sim(tmp_path, monkeypatch):
    monkeypatch.delenv("EAGLE_CONSOLE_GPU_BACKEND", raising=False)
    d = tmp_path / "sim"
    gpustate.create_node(d)
    monkeypatch.setenv("EAGLE_CONSOLE_SIM", str(d))
    return d


def holding_env(tmp_path: Path, sim: Path) -> dict[str, str]:
    site = tmp_path / "site"
    site.mkdir(exist_ok=True)
    (site / "sitecustomize.py").write_text(SITECUSTOMIZE)
    return {**os.environ, HOLD_ENV: str(sim), "PYTHONPATH": f"{site}{os.pathsep}{os.environ['PYTHONPATH']}",
            "TERM": "xterm-256color"}


def open_console(plan: Path, sim: Path, env: dict[str, str]) -> subprocess.Popen:
    """The real console on a pty, in this test's session (not a session of its own)."""
    return open_console_argv([sys.executable, "-m", "eagle_console", "tui", str(plan), "--sim", str(sim)], env)


def open_console_argv(argv: list[str], env: dict[str, str], own_session: bool = False) -> subprocess.Popen:
    """The console started by `argv` on a pty, in this test's session or (`own_session`) in a session of
    its own, as from another terminal; a thread drains its output."""
    master, slave = pty.openpty()
    proc = subprocess.Popen(argv, stdin=slave, stdout=slave, stderr=slave, env=env, start_new_session=own_session)
    os.close(slave)

    def drain() -> None:  # a full pty would block the console's writes
        while True:
            try:
                if not os.read(master, 65536):
                    return
            except OSError:
                return

    threading.Thread(target=drain, daemon=True).start()
    return proc


def held_by(sim: Path) -> set[int]:
    return {h.pid for h in gpustate.holders(sim)}


def start_holder(sim: Path, gpu: int, mib: float) -> subprocess.Popen:
    """A Python holding a GPU in this test's session: started from the console's session."""
    proc = subprocess.Popen([sys.executable, "-c", HOLDER_CODE.format(gpu=gpu, mib=mib), str(sim)],
                            stdout=subprocess.PIPE, text=True)
    assert proc.stdout.readline().strip() == "up"
    return proc


def test_gpu_kill_matching_python_spares_cli_supervisor_console_and_its_session(tmp_path, sim, request):
    plan = write_plan(tmp_path, KILL_EVERYTHING_PLAN)
    env = holding_env(tmp_path, sim)
    workers = leave_orphans(sim, 2)
    request.addfinalizer(lambda: stop_pids(workers))
    console = open_console(plan, sim, env)
    request.addfinalizer(lambda: (console.kill(), console.wait()))
    helper = start_holder(sim, 1, 500.0)
    request.addfinalizer(lambda: (helper.kill(), helper.wait()))
    wait_for(lambda: console.pid in held_by(sim), timeout=60)

    cli = subprocess.Popen([sys.executable, "-m", "eagle_console", "run", str(plan), "0.1", "--yes", "--wait"],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    out, err = cli.communicate(timeout=120)
    assert cli.returncode == 0, out + err  # it was there to see the end: not killed

    journal = Journal.for_plan(engine_for(plan).plan)
    try:
        (run,) = journal.runs("0.1")
        (event,) = [e for e in journal.events() if e.kind == "kill"]
    finally:
        journal.close()
    record = KillRecord.from_event(event)
    assert sorted(record.killed) == sorted(workers) and record.survivors == []
    refused = {r["pid"]: r["reason"] for r in record.refused}
    assert refused == {cli.pid: "eagle-console process", run.supervisor_pid: "eagle-console process",
                       console.pid: "eagle-console process", helper.pid: session_reason()}
    assert console.poll() is None and helper.poll() is None
    log = Path(run.log).read_text()
    assert f"refused {cli.pid}: eagle-console process" in log
    assert f"refused {helper.pid}: {session_reason()}" in log
    assert not any(psutil.pid_exists(p) and psutil.Process(p).status() != psutil.STATUS_ZOMBIE for p in workers)


@pytest.mark.parametrize(("argv", "kind"), [
    ("/opt/venv/bin/python -u -X dev -m eagle_console run plan.toml 0.1 --wait", "console"),
    ("python3 -meagle_console.cli orphans", "console"),
    ("python -m eagle_console.engine.supervise /x/spec.json --detach", "engine"),
    ("python -m eagle_console.engine.action --spec /x/a.json", "engine"),
])
def test_eagle_console_processes_are_told_by_their_command_line(argv, kind):
    """Interpreter options before `-m`, `-mMODULE`, and the run's own processes (whose sessions are the
    runs', not a console's); test_procs_classify covers the plain forms and the sim's workers."""
    assert eagle_console_kind(argv.split()) == kind


def test_a_supervisor_the_journal_recorded_is_protected_whatever_its_command_line(tmp_path, sim, request):
    """A live supervisor recorded in the journal is an eagle-console process even when its command line
    says nothing (a renamed interpreter, a zipapp): `orphans --kill --scope match` leaves it alone."""
    plan = write_plan(tmp_path, KILL_EVERYTHING_PLAN)
    eng = engine_for(plan)
    sup = subprocess.Popen([sys.executable, "-c", HOLDER_CODE.format(gpu=4, mib=800.0), str(sim)],
                           stdout=subprocess.PIPE, text=True, start_new_session=True)
    request.addfinalizer(lambda: (sup.kill(), sup.wait()))
    assert sup.stdout.readline().strip() == "up"
    run_id = eng.journal.begin_run("0.1", command="gpu.kill", log=None)
    eng.journal.record_proc(run_id, "0.1", supervisor_pid=sup.pid, supervisor_ctime=start_of(sup.pid))
    assert journal_supervisors(eng.journal) == {sup.pid}
    out = subprocess.run([sys.executable, "-m", "eagle_console", "orphans", str(plan), "--json", "--kill", "--yes",
                          "--scope", "match", "--match", "python", "--grace", "1s", "--sim", str(sim)],
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    doc = json.loads(out.stdout)
    (listed,) = [h for h in doc["holders"] if h["pid"] == sup.pid]
    assert listed["reason"].endswith("not signalled: eagle-console process")
    assert doc["killed"] == [] and sup.poll() is None


def test_orphans_kill_scope_all_spares_a_tracked_process_unless_included(tmp_path, sim, request):
    plan = write_plan(tmp_path, f"""
        [[phase]]
        id = "0"
        title = "P"
          [[phase.step]]
          id = "0.3"
          title = "Server"
          run = {json.dumps([sys.executable, "-c", HOLDER_CODE.format(gpu=2, mib=3000.0), str(sim)])}
    """)
    eng = engine_for(plan)
    run_id = eng.start("0.3")
    server = wait_for(lambda: next(iter(held_by(sim)), None), timeout=30)
    request.addfinalizer(lambda: (stop_pids([server]), eng.wait(run_id, timeout=30)))
    orphans = leave_orphans(sim, 1)
    request.addfinalizer(lambda: stop_pids(orphans))

    def kill(*extra: str) -> dict:
        out = subprocess.run([sys.executable, "-m", "eagle_console", "orphans", str(plan), "--json", "--kill",
                              "--yes", "--scope", "all", "--grace", "1s", "--sim", str(sim), *extra],
                             capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL)
        assert out.returncode == 0, out.stderr
        return json.loads(out.stdout)

    doc = kill()
    assert doc["killed"] == orphans and psutil.pid_exists(server)
    (listed,) = [h for h in doc["holders"] if h["pid"] == server]
    assert listed["class"] == "tracked" and listed["owner"] == "0.3"
    assert "not signalled: tracked by step 0.3" in listed["reason"] and "--include-tracked" in listed["reason"]
    doc = kill("--include-tracked")
    assert doc["killed"] == [server]


def test_orphans_on_a_sim_folder_that_is_no_node_is_bad_input(tmp_path):
    """A --sim folder without node.json (or with a broken one) is a wrong path, not a node with no GPUs:
    exit 2 and one line (issue 26; before, exit 1 with the error in the document, `gpus` exit 0). A backend
    that fails on a real machine is tests/test_gpus_no_driver.py's."""
    broken = tmp_path / "sim"
    broken.mkdir()
    for node_json in (None, "{bad", '{"gpus": 3}'):
        if node_json is not None:
            (broken / "node.json").write_text(node_json)
        for command in (["orphans", "--json"], ["gpus", "--json"]):
            out = subprocess.run([sys.executable, "-m", "eagle_console", *command, "--sim", str(broken)],
                                 capture_output=True, text=True, timeout=60)
            assert out.returncode == 2 and out.stdout == "", (command, out.stdout, out.stderr)
            assert out.stderr.startswith(f"eagle-console: --sim {broken}: not a simulated node (")
            assert out.stderr.count("\n") == 1



def _can_unshare() -> bool:
    try:
        return subprocess.run(["unshare", "--pid", "--fork", "--mount-proc", "true"], capture_output=True,
                              timeout=30).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        return False


@pytest.mark.skipif(not _can_unshare(), reason="needs `unshare --pid` (root)")
def test_a_holder_in_a_session_led_from_outside_the_namespace_is_not_killed(tmp_path):
    """CI runs the suite under `docker exec` without a tty: the session's leader is outside the PID
    namespace, so getsid() is 0 for the CLI and for a job of its terminal alike. Such a holder may be in
    the CLI's session and is refused; before, 0 was dropped as "no session" and the job was killed."""
    sim = tmp_path / "sim"
    gpustate.create_node(sim)
    hold = f"from eagle_console.sim import gpustate; import signal; gpustate.hold({str(sim)!r}, {{1: 512.0}}); " \
           "print('up', flush=True); signal.pause()"
    script = (f"{sys.executable} -c \"{hold}\" > {tmp_path}/up &\n"
              f"for i in $(seq 200); do grep -q up {tmp_path}/up && break; sleep 0.05; done\n"
              f"{sys.executable} -m eagle_console orphans --json --kill --yes --scope all --grace 1s --sim {sim}\n"
              "echo \"alive=$(kill -0 $! 2>/dev/null && echo yes || echo no)\"\nkill -9 $! 2>/dev/null || true\n")
    out = subprocess.run(["unshare", "--pid", "--fork", "--mount-proc", "sh", "-c", script],
                         capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL)
    body, alive = out.stdout.rsplit("alive=", 1)
    doc = json.loads(body)
    assert doc["killed"] == [], doc
    # its parent is the namespace's PID 1, the shell that started it: a live job of it, not an orphan by ppid
    (holder,) = doc["holders"]
    assert holder["class"] == "other"
    assert holder["reason"].endswith("not signalled: " + MAYBE_LIVE_JOB.format(ppid=1))
    assert alive.strip() == "yes"


def test_the_supervisors_follow_the_journal_from_one_scan_to_the_next(tmp_path):
    """journal_supervisors remembers, per journal, which runs' supervisors are gone and asks /proc only about
    the others (a scan asked about all 12,500 runs of a long history each time). What it answers must still
    follow the journal: a run begun after the first scan, a supervisor recorded after its run began, one that
    exits, a later run's, and a fresh reader's first scan."""
    plan = write_plan(tmp_path, KILL_EVERYTHING_PLAN)
    journal = Journal.for_plan(engine_for(plan).plan)

    first, second, third = (subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"],
                                             start_new_session=True) for _ in range(3))
    try:
        ended = journal.begin_run("0.1", command="true", log=None, force=True)
        journal.record_proc(ended, "0.1", supervisor_pid=first.pid, supervisor_ctime=start_of(first.pid))
        assert journal_supervisors(journal) == {first.pid}
        later = journal.begin_run("0.1", command="true", log=None, force=True)
        assert journal_supervisors(journal) == {first.pid}  # begun, its supervisor not recorded yet
        journal.record_proc(later, "0.1", supervisor_pid=second.pid,
                            supervisor_ctime=start_of(second.pid))
        assert journal_supervisors(journal) == {first.pid, second.pid}
        first.kill()
        first.wait()
        assert journal_supervisors(journal) == {second.pid}
        again = journal.begin_run("0.1", command="true", log=None, force=True)  # a new run, a live supervisor
        journal.record_proc(again, "0.1", supervisor_pid=third.pid, supervisor_ctime=start_of(third.pid))
        assert journal_supervisors(journal) == {second.pid, third.pid}
        assert journal_supervisors(Journal.for_plan(engine_for(plan).plan)) == {second.pid, third.pid}  # a fresh reader
    finally:
        for proc in (first, second, third):
            if proc.poll() is None:
                proc.kill()
                proc.wait()
        journal.close()


def test_the_tracked_runs_follow_the_journal_from_one_poll_to_the_next(tmp_path):
    """tracked_runs keeps an ended run's record and looks again only at runs begun or still open since the
    last call (it walked the whole history each poll). What it answers must still be the journal's: a
    session recorded after the first call, a run that ends (live, then ended), runs in start order."""
    from eagle_console.node.procs import tracked_runs

    plan = write_plan(tmp_path, KILL_EVERYTHING_PLAN)
    journal = Journal.for_plan(engine_for(plan).plan)
    action = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"], start_new_session=True)
    try:
        ctime = start_of(action.pid)
        old = journal.begin_run("0.1", command="true", log=None, force=True)
        journal.record_proc(old, "0.1", pid=4_000_000, pid_ctime=1.0, pgid=4_000_000, sid=4_000_000)
        journal.end_run(old, "0.1", exit_code=0, outcome="completed")
        assert [(t.run_id, t.ended is not None) for t in tracked_runs(journal)] == [(old, True)]
        run = journal.begin_run("0.1", command="true", log=None, force=True)
        assert [t.run_id for t in tracked_runs(journal)] == [old]  # no session recorded yet
        journal.record_proc(run, "0.1", pid=action.pid, pid_ctime=ctime, pgid=action.pid, sid=action.pid)
        (_, live) = tracked_runs(journal)
        assert (live.run_id, live.main_alive, live.ended) == (run, True, None)
        action.kill()
        action.wait()
        (_, dead) = tracked_runs(journal)
        assert (dead.run_id, dead.main_alive, dead.ended) == (run, False, None)  # the supervisor records the end
        journal.end_run(run, "0.1", exit_code=-9, outcome="failed")
        assert [(t.run_id, t.ended is not None) for t in tracked_runs(journal)] == [(old, True), (run, True)]
    finally:
        if action.poll() is None:
            action.kill()
            action.wait()
        journal.close()
