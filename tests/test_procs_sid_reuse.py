"""Session ids are pids, and pids are reused (pid_max 32768 on the node): a GPU process whose sid equals an
old run's sid is that run's orphan only if the session really is the run's.

The real case runs in a PID namespace of its own (`unshare --pid --fork --mount-proc`, root), where
/proc/sys/kernel/ns_last_pid makes the next process take the old run's pid, so an unrelated launcher
leads a new session with the old sid. Where unshare is refused, the documented simulation below (a
journal run record naming the sid of a live unrelated session) stands in.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import textwrap
import time

import pytest

from eagle_console.node.gpus import open_backend
from eagle_console.node.procs import TrackedRun, scan_holders
from eagle_console.processes import CLOCK_TICKS, stamp, start_ticks
from eagle_console.sim import gpustate

INSIDE = textwrap.dedent('''
    import json, os, signal, subprocess, sys, time
    from pathlib import Path
    from eagle_console.node.gpus import open_backend
    from eagle_console.node.procs import TrackedRun, scan_holders
    from eagle_console.sim import gpustate
    from eagle_console.processes import start_of

    sim = Path(sys.argv[1])
    gpustate.create_node(sim)
    # the old run: its main process led session S, then the whole session ended
    old = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"], start_new_session=True)
    sid, ctime = old.pid, start_of(old.pid)  # as the supervisor records it
    old.kill(); old.wait()
    ended = time.time()
    time.sleep(0.3)  # create times match within 0.05 s (clock ticks): be born clearly later
    # an unrelated launcher takes pid S (and so sid S) and starts a GPU worker; both stay alive
    Path("/proc/sys/kernel/ns_last_pid").write_text(str(sid - 1))
    worker = ("import signal, sys; from eagle_console.sim import gpustate; "
              "gpustate.hold(sys.argv[1], {2: 900.0}); print('ready', flush=True); signal.pause()")
    launcher = subprocess.Popen([sys.executable, "-c",
        "import subprocess, sys, time; w = subprocess.Popen([sys.executable, '-c', sys.argv[1], sys.argv[2]], "
        "stdout=subprocess.PIPE); print(w.pid, flush=True); print(w.stdout.readline().decode().strip(), "
        "flush=True); time.sleep(60)", worker, str(sim)], start_new_session=True, stdout=subprocess.PIPE)
    wpid = int(launcher.stdout.readline())
    launcher.stdout.readline()
    backend = open_backend(sim)
    def classify(run):
        (h,) = [h for h in scan_holders(backend.sample(), [run], device_prefix=backend.device_prefix)
                if h.pid == wpid]
        return [h.cls, h.reason, h.sid, h.ppid]
    run = dict(step_id="0.3", run_id=7, sid=sid, main_pid=sid, main_alive=False)
    out = {"sid": sid, "launcher": launcher.pid, "worker": wpid,
           "with_identity": classify(TrackedRun(**run, main_ctime=ctime, ended=ended)),
           "sid_only": classify(TrackedRun(**run))}
    launcher.kill(); launcher.wait()
    os.kill(wpid, signal.SIGKILL)
    print(json.dumps(out), flush=True)
''')


def test_reused_sid_in_a_fresh_pid_namespace_is_not_the_old_runs_orphan(tmp_path):
    if os.geteuid() != 0 or shutil.which("unshare") is None:
        pytest.skip("needs root and unshare (see test_live_unrelated_session_with_an_old_runs_sid)")
    script = tmp_path / "inside.py"
    script.write_text(INSIDE)
    probe = subprocess.run(["unshare", "--pid", "--fork", "--mount-proc", "true"], capture_output=True)
    if probe.returncode != 0:
        pytest.skip(f"unshare refused here: {probe.stderr.decode().strip()}")
    out = subprocess.run(["unshare", "--pid", "--fork", "--mount-proc", sys.executable, str(script),
                          str(tmp_path / "sim")], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    res = json.loads(out.stdout.strip().splitlines()[-1])
    assert res["launcher"] == res["sid"]  # the unrelated launcher really took the old run's pid
    cls, reason, sid, ppid = res["with_identity"]
    assert sid == res["sid"] and ppid == res["launcher"]
    assert cls == "other" and reason is None  # parent alive, its own session: not run 7's orphan
    # without the leader's identity (records written before it was kept) the sid alone decides, as before
    assert res["sid_only"][:2] == ["orphan", "launcher of run 7 exited"]


def test_live_unrelated_session_with_an_old_runs_sid(tmp_path):
    """The simulation: the journal's run 7 names sid S with a leader born at another time (the pid has
    since been reused), and S is now the session of a live launcher whose worker holds a GPU."""
    sim = tmp_path / "sim"
    gpustate.create_node(sim)
    worker = ("import signal, sys; from eagle_console.sim import gpustate; "
              "gpustate.hold(sys.argv[1], {1: 500.0}); print('ready', flush=True); signal.pause()")
    launcher = subprocess.Popen(
        [sys.executable, "-c", "import subprocess, sys, time; w = subprocess.Popen([sys.executable, '-c', "
         "sys.argv[1], sys.argv[2]], stdout=subprocess.PIPE); print(w.pid, flush=True); "
         "print(w.stdout.readline().decode().strip(), flush=True); time.sleep(60)", worker, str(sim)],
        start_new_session=True, stdout=subprocess.PIPE)
    try:
        wpid = int(launcher.stdout.readline())
        launcher.stdout.readline()
        sid = launcher.pid
        born = start_ticks(sid)
        backend = open_backend(sim)

        def scan(run: TrackedRun):
            (h,) = [h for h in scan_holders(backend.sample(), [run], device_prefix=backend.device_prefix)
                    if h.pid == wpid]
            return h

        old = TrackedRun(step_id="0.3", run_id=7, sid=sid, main_pid=sid, main_alive=False,
                         main_ctime=stamp(born - 3600 * CLOCK_TICKS), ended=time.time() - 3000.0)
        h = scan(old)
        assert h.sid == sid and h.ppid == launcher.pid
        assert (h.cls, h.owner) == ("other", None)
        # the run's own session (same leader identity) still makes a live run's worker tracked
        own = TrackedRun(step_id="0.3", run_id=8, sid=sid, main_pid=sid, main_alive=True,
                         main_ctime=stamp(born))
        assert (scan(own).cls, scan(own).owner) == ("tracked", "0.3")
    finally:
        os.killpg(launcher.pid, signal.SIGKILL)
        launcher.wait()
        deadline = time.monotonic() + 5
        while gpustate.holders(sim) and time.monotonic() < deadline:
            time.sleep(0.02)
