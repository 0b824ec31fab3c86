"""The entrypoint of a rank's Ray job: the rank in a session of its own, stopped as a whole. No Ray import.

    python -m eagle_console.cluster.rank_session --spec-file PATH   (PATH: {"argv": [...], "env": {...}, "grace_s"})

PATH is a private file on this node that the node's agent wrote (cluster/handoff.py); it is read and
removed at once. The rank's env (the plan's `[env]`: an HF token) is never in the job's entrypoint, which
every user of the node sees in `ps` and Ray writes into its logs.

Ray runs a job's entrypoint in a new session and `stop_job` signals the entrypoint and its descendants
(job_supervisor.py, 2.60.0). But a rank whose launcher died leaves its schedulers behind, reparented: no
longer anyone's descendants, still holding GPU memory, and the job has ended. So this wrapper starts the
rank in a session of its own, reports its pids on the job's log (a `proc` event line, cluster/job_events),
and stops the rank's whole session: on SIGTERM/SIGINT (stop_job), and when the rank's leader ends by itself
(then it exits with the leader's code, which Ray records as the job's driver exit code).
"""

from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys
import threading

DEFAULT_GRACE_S = 5.0


def exit_status(code: int | None) -> int:
    """A Popen return code as a shell would give it (a signal N: 128 + N)."""
    if code is None:
        return 1
    return 128 - code if code < 0 else code


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="eagle_console.cluster.rank_session")
    ap.add_argument("--spec-file", required=True)
    args = ap.parse_args(argv)
    from eagle_console.cluster.handoff import take_spec
    from eagle_console.cluster.job_events import JobEvents
    from eagle_console.processes import start_of, stop_session
    from eagle_console.pyenv import forget_own_entry

    spec = take_spec(args.spec_file)
    grace = float(spec.get("grace_s", DEFAULT_GRACE_S))
    forget_own_entry()  # the rank gets the node's PYTHONPATH (and the plan's), not ours
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    signal.signal(signal.SIGINT, lambda *_: stop.set())
    sys.stdout.flush()
    child = subprocess.Popen(spec["argv"], env={**os.environ, **spec.get("env", {})}, stdin=subprocess.DEVNULL,
                             start_new_session=True)  # its output is ours: the job's log
    ctime = start_of(child.pid)
    JobEvents().record_proc(0, "", pid=child.pid, pid_ctime=ctime, pgid=child.pid, sid=child.pid)
    while child.poll() is None and not stop.wait(0.2):
        pass
    # Stopped, or the leader ended: either way nothing of the rank's session may outlive this job.
    stop_session(child.pid, child.pid, grace, leader_start=ctime, own_child=child)
    try:
        code = child.wait(timeout=grace + 5)
    except subprocess.TimeoutExpired:
        code = None
    print(f"[eagle-console] rank session {child.pid} ended ({'stopped' if stop.is_set() else 'exited'}, "
          f"code {code})", flush=True)
    return exit_status(code)


if __name__ == "__main__":
    sys.exit(main())
