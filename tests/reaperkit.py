"""The test process as the reaper of what its tests orphan (prctl PR_SET_CHILD_SUBREAPER).

A detached supervisor, a killed server's schedulers, a sim's orphans: once their parent is gone they are
adopted by PID 1, and a killed one stays a zombie until PID 1 reaps it. PID 1 of this machine's container
reaps every second or two, and everything that waits for a killed process to be *gone* (psutil.wait_procs
on a process that is not its child: engine/procs.stop_session, the kill paths) waited that long each time.
As a subreaper this process adopts them instead, and a thread reaps each one the moment it is a zombie
(it sleeps in waitid(2) until a child exits).

Only adopted children are reaped: a child this process started itself (subprocess.Popen, os.fork,
os.forkpty, os.posix_spawn) keeps its exit status for its own wait(). Those are recorded, by pid and start
time, under the same lock the reaper scans with, so a child that exits before its pid is recorded is never
mistaken for an orphan. The product sees the difference only in a holder's parent pid (this process
instead of 1): its classification handles an unknown subreaper (node/procs.py, `_abandoned_session`).
A terminal's orphans must still go to PID 1 (what tests/e2e reads on screen): tmuxkit starts tmux's server
`not_adopting()`.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import subprocess
import threading

PR_SET_CHILD_SUBREAPER = 36  # linux/prctl.h
SCAN_S = 0.05

_lock = threading.RLock()
_ours: dict[int, int] = {}  # pid -> start time (clock ticks since boot): pids are reused
_started = False


def _start_time(pid: int) -> int | None:
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            stat = f.read()
    except OSError:
        return None
    return int(stat[stat.rindex(b")") + 2:].split()[19])  # field 22, counted after the comm's ")"


def _state(pid: int) -> tuple[bytes, int] | None:
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            stat = f.read()
    except OSError:
        return None
    rest = stat[stat.rindex(b")") + 2:].split()
    return rest[0], int(rest[19])


def _record(pid: int) -> None:
    if pid > 0:
        start = _start_time(pid)
        if start is not None:
            _ours[pid] = start


def _children() -> list[int]:
    pids: list[int] = []
    for tid in os.listdir("/proc/self/task"):
        with contextlib.suppress(OSError):
            with open(f"/proc/self/task/{tid}/children") as f:
                pids += map(int, f.read().split())
    return pids


def reap_adopted() -> list[int]:
    """Reap every adopted child that is a zombie now; returns their pids."""
    reaped = []
    with _lock:
        for pid in _children():
            state = _state(pid)
            if state is None or state[0] != b"Z" or _ours.get(pid) == state[1]:
                continue
            with contextlib.suppress(ChildProcessError):
                if os.waitpid(pid, os.WNOHANG)[0] == pid:
                    reaped.append(pid)
        if len(_ours) > 512:  # forget the ones that are gone (reaped by their Popen)
            for pid in [p for p in _ours if _start_time(p) != _ours[p]]:
                del _ours[pid]
    return reaped


def _wrap(fn):
    def forked(*args, **kwargs):
        with _lock:
            pid = fn(*args, **kwargs)
            _record(pid[0] if isinstance(pid, tuple) else pid)
            return pid
    return forked


def _wrap_popen(execute_child):
    def execute(self, *args, **kwargs):
        with _lock:
            execute_child(self, *args, **kwargs)
            _record(self.pid)
    return execute


def become_subreaper() -> bool:
    """Make this process the subreaper of its descendants and start the reaping thread (once). False where
    prctl is refused (not Linux): orphans then go to PID 1 as before."""
    global _started
    if _started:
        return True
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        if libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) != 0:
            return False
    except (OSError, AttributeError):
        return False
    for name in ("fork", "forkpty", "posix_spawn", "posix_spawnp"):
        if hasattr(os, name):
            setattr(os, name, _wrap(getattr(os, name)))
    subprocess.Popen._execute_child = _wrap_popen(subprocess.Popen._execute_child)
    _started = True
    threading.Thread(target=_reap_forever, name="reaperkit", daemon=True).start()
    return True


@contextlib.contextmanager
def not_adopting():
    """While inside, what is orphaned goes to PID 1 as without this kit: for a daemon started here that
    must not be this process's child (tmux's server: the orphans of a job in its terminal are then adopted
    by PID 1, `ppid 1 · started from this terminal`, as on an operator's machine, not by this process)."""
    if not _started:
        yield
        return
    libc = ctypes.CDLL(None, use_errno=True)
    with _lock:
        libc.prctl(PR_SET_CHILD_SUBREAPER, 0, 0, 0, 0)
        try:
            yield
        finally:
            libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)


def _reap_forever() -> None:
    """Scan when a child has exited, not every SCAN_S: `waitid(WNOWAIT)` blocks until some child is a zombie
    and leaves it for whoever waits for it. Polling every 50 ms (reading /proc/self/task/*/children of every
    thread) cost a process 9.5 ms of CPU a second with 2 threads, 17.9 with 30, for the whole run in each xdist
    worker: ~19 % of the workers' samples (py-spy, docs/performance.md)."""
    import time

    pause = 0.0  # > 0 while a zombie of our own waits for its Popen's wait(): look again after it, doubling
    while True:
        try:
            exited = os.waitid(os.P_ALL, 0, os.WEXITED | os.WNOWAIT | (os.WNOHANG if pause else 0))
        except OSError:  # no child at all (ChildProcessError): one started later is looked at within SCAN_S
            pause = 0.0
            time.sleep(SCAN_S)
            continue
        if exited is None:  # no zombie left: block again
            pause = 0.0
            continue
        reaped: list[int] = []
        with contextlib.suppress(Exception):
            reaped = reap_adopted()
        if exited.si_pid in reaped:
            pause = 0.0
        else:  # ours: waitid reports it again at once until its owner waits for it
            pause = min(SCAN_S, pause * 2 or 0.001)
            time.sleep(pause)
