"""Process helpers for runs: liveness with pid-reuse protection, and stopping a whole session."""

from __future__ import annotations

import functools
import os
import signal
import subprocess
import time
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import psutil  # loaded where a session is swept: `status`, `mark` and the console's liveness checks need
    # only /proc (psutil is ~15 ms of a CLI process's ~110)

CTIME_SLACK_S = 0.05  # an older journal's epoch create times, read twice, differ by psutil's tick rounding
CLOCK_TICKS = os.sysconf("SC_CLK_TCK")
BOOT_ID = "/proc/sys/kernel/random/boot_id"

# A process's identity as the journal, job events, approvals and the sim's holder files record it: its start
# in clock ticks since boot (/proc/PID/stat field 22, fixed by the kernel at fork) and the id of that boot,
# "TICKS@BOOT_ID". Not an epoch time: psutil's create_time is those ticks plus /proc/stat's btime, and btime
# is the wall clock minus the uptime, worked out at each read (Linux kernel/time/timekeeping.c
# getboottime64), so every step of the wall clock (chrony's makestep after a VM resumes from a snapshot,
# `date -s`, a leap second) moves the create time of every running process — a live supervisor then looked
# like a reused pid, its run was recorded lost and its SGLang workers became orphans for K. psutil keys its
# own Process identity on the ticks for the same reason (psutil 7.2 `_get_ident`, giampaolo/psutil#2541).
# A float is an older journal's epoch create time, still compared as it was recorded.
ProcStart = str | float


def _stat(pid: int | None) -> list[bytes] | None:
    """The fields of /proc/PID/stat after the command name (the state first, field 3), or None when there is
    no such process. Split after the last `)`: a command name may hold spaces and parens."""
    if not pid:
        return None
    try:
        with open(f"/proc/{int(pid)}/stat", "rb") as f:
            return f.read().rsplit(b")", 1)[1].split()
    except (OSError, IndexError, ValueError):
        return None


def _ticks(fields: list[bytes]) -> int | None:
    """Field 22 (starttime) as the initial time namespace counts it: the kernel adds the reader's own time
    namespace's boottime offset (fs/proc/array.c, timens_add_boottime_ns), so a console and a supervisor in
    namespaces of different offsets (`unshare --time`, a CRIU-restored container) would disagree."""
    try:
        return int(fields[19]) - _timens_ticks()
    except (IndexError, ValueError):
        return None


@functools.lru_cache(maxsize=1)
def _timens_ticks() -> int:
    """This process's time namespace's boottime offset, in clock ticks (0 outside one, or where unknown)."""
    try:
        with open("/proc/self/timens_offsets") as f:
            for line in f:
                name, secs, nsecs = line.split()
                if name == "boottime":
                    return round((int(secs) + int(nsecs) / 1e9) * CLOCK_TICKS)
    except (OSError, ValueError):
        pass
    return 0


def _started(fields: list[bytes]) -> float | None:
    """When the process started, in seconds since the epoch, as psutil's Process.create_time gives it on
    Linux (psutil/_pslinux.py, 5.9-7.2: the starttime field in clock ticks, plus /proc/stat's btime), so
    either may be compared with the other. For showing and for comparing with journal times only: it moves
    when the wall clock is stepped, so it never names a process (`start_of` does)."""
    ticks = _ticks(fields)
    try:
        return ticks / CLOCK_TICKS + _boot_time() if ticks is not None else None
    except (OSError, ValueError):
        return None


def create_time(pid: int) -> float | None:
    """When `pid` started (`_started`), None when there is no such process."""
    fields = _stat(pid)
    return _started(fields) if fields is not None else None


@functools.lru_cache(maxsize=1)
def boot_id() -> str:
    """This boot's id ("" where it cannot be read): a process cannot outlive the boot it runs in."""
    try:
        with open(BOOT_ID) as f:
            return f.read().strip()
    except OSError:
        return ""


@functools.lru_cache(maxsize=1)
def this_host() -> str:
    """The machine a supervisor records itself on (its hostname): a state dir on a home shared by several
    machines (NFS) holds runs whose pids are another machine's, never judged or signalled here."""
    import socket

    return socket.gethostname()


def on_this_host(host: str | None) -> bool:
    """A run recorded on `host` has its processes on this machine (no host: an older record, as before)."""
    return not host or host == this_host()


def start_of(pid: int | None) -> str | None:
    """`pid`'s identity to record ("TICKS@BOOT_ID"), None when there is no such process."""
    ticks = start_ticks(pid)
    return stamp(ticks) if ticks is not None else None


def stamp(ticks: int) -> str:
    """The recorded form of a start of this boot, `ticks` clock ticks after it."""
    return f"{ticks}@{boot_id()}"


def boot_now() -> str:
    """This moment, recorded as a start is ("TICKS@BOOT_ID"): by the boot clock, which a step of the wall
    clock does not move (the clock a process's start is counted by)."""
    return stamp(int(_boot_clock_ticks()))


def seconds_since(recorded: str | None) -> float | None:
    """Seconds by the boot clock from a `boot_now()` stamp to now; None for none, or one of another boot."""
    got = recorded_ticks(recorded) if isinstance(recorded, str) else None
    return None if got is None else max(0.0, (_boot_clock_ticks() - got[0]) / CLOCK_TICKS)


def _boot_clock_ticks() -> float:
    # CLOCK_BOOTTIME reads with this process's time namespace's offset, as /proc's starttime does (_ticks)
    return time.clock_gettime(time.CLOCK_BOOTTIME) * CLOCK_TICKS - _timens_ticks()


def start_ticks(pid: int | None) -> int | None:
    """When `pid` started, in clock ticks since boot; None when there is no such process."""
    fields = _stat(pid)
    return _ticks(fields) if fields is not None else None


def recorded_ticks(start: str | float | None) -> tuple[float, float] | None:
    """A recorded start as (ticks since this boot, tolerance in ticks); None when it names no process that
    can be running now (recorded in an earlier boot) or cannot be read."""
    if isinstance(start, str):
        ticks, _, boot = start.partition("@")
        here = boot_id()
        if boot and here and boot != here:
            return None  # recorded before a reboot
        try:
            return float(int(ticks)), 0.5  # exact: both sides are the kernel's own integer
        except ValueError:
            return None
    try:  # an older journal's epoch create time: against btime now, as it was compared when recorded
        ticks = ticks_at(float(start))
    except (TypeError, ValueError):
        return None
    return (ticks, CTIME_SLACK_S * CLOCK_TICKS) if ticks is not None else None


def ticks_at(epoch: float) -> float | None:
    """The wall-clock time `epoch` in clock ticks since boot, by the wall clock now (a step of it since
    `epoch` moves the answer), counted as `_ticks` counts (a time namespace moves btime back by its offset);
    None when /proc/stat cannot be read."""
    try:
        return (epoch - _boot_time()) * CLOCK_TICKS - _timens_ticks()
    except (OSError, ValueError):
        return None


def _boot_time() -> float:
    with open("/proc/stat", "rb") as f:
        for line in f:
            if line.startswith(b"btime"):
                return float(line.split()[1])
    raise OSError("no btime in /proc/stat")


def open_live(pids: list[int]) -> list[psutil.Process]:
    """psutil handles for those of `pids` still running. Each is opened once, inside the try: a pid can exit
    between a check and `psutil.Process()` (pid_exists then Process() raced and failed CI)."""
    import psutil

    procs = []
    for pid in pids:
        try:
            procs.append(psutil.Process(pid))
        except psutil.Error:
            continue
    return procs


def hidden(pid: int) -> bool:
    """`pid` runs in this PID namespace but /proc will not show it to us: /proc mounted with hidepid (1, 2,
    or `invisible`; proc(5)) on a node shared by several users hides their processes from each other. A
    signal 0 still reaches such a process and is refused (EPERM), where a pid nobody has gives ESRCH."""
    try:
        with open(f"/proc/{int(pid)}/stat", "rb"):
            return False
    except (FileNotFoundError, PermissionError):
        pass
    except (OSError, ValueError):
        return False
    try:
        os.kill(int(pid), 0)
    except PermissionError:
        return True
    except OSError:
        return False
    return False


def proc_state(pid: int | None) -> str | None:
    """The state letter of /proc/PID/stat (R running, S/D sleeping, T/t stopped, Z zombie, X dead), or None
    when there is no such process."""
    fields = _stat(pid)
    return fields[0].decode() if fields else None


STOPPED = ("T", "t")  # SIGSTOP/SIGTSTP, or stopped by a tracer
DEAD = ("Z", "X")  # exited, not reaped yet: no longer running, whatever its parent does


def alive(pid: int | None, start: ProcStart | None = None) -> bool:
    """True if `pid` exists, is not a zombie, and (when its recorded `start` is given) is the same process,
    not a reused pid. A stopped process is alive: it goes on when continued."""
    fields = _stat(pid)  # one read for the state and the start
    if not fields or fields[0].decode() in DEAD:
        return False
    return start is None or _born_at(fields, start)


def same_process(pid: int, start: ProcStart | None) -> bool:
    """`pid` is the process recorded as started at `start` (a reused pid started later)."""
    if start is None:
        return True
    fields = _stat(pid)
    return fields is not None and _born_at(fields, start)


def _born_at(fields: list[bytes], start: ProcStart) -> bool:
    ref, ticks = recorded_ticks(start), _ticks(fields)
    return ref is not None and ticks is not None and abs(ticks - ref[0]) < ref[1]


def session_window(sid: int, leader_start: ProcStart) -> tuple[float, float | None] | None:
    """Which starts (ticks since boot, `lo` <= t < `hi`) belong to the session the run's leader (recorded
    `leader_start`) made: none born before it; and when the number now leads another session (a reused pid),
    none born since that leader. None when the leader was of an earlier boot: nothing running is its."""
    ref = recorded_ticks(leader_start)
    if ref is None:
        return None
    now = start_ticks(sid)
    return ref[0] - ref[1], (now - ref[1] if now is not None and abs(now - ref[0]) >= ref[1] else None)


def born_within(pid: int, window: tuple[float, float | None] | None) -> bool:
    """`pid` runs (not a zombie) and, with a `window` (`session_window`), was born inside it."""
    fields = _stat(pid)
    if not fields or fields[0].decode() in DEAD:
        return False
    if window is None:
        return True
    ticks = _ticks(fields)
    return ticks is not None and ticks >= window[0] and (window[1] is None or ticks < window[1])


def session_members(sid: int, pgid: int | None = None,
                    leader_start: ProcStart | None = None) -> list[psutil.Process]:
    """Every process in session `sid` (or process group `pgid`), except the caller.

    With `leader_start` (the run's recorded leader start) only the run's own: pids, and so sids, are reused,
    so a process born before the run's leader, or after a live leader of that number that is not the run's,
    belongs to someone else (`session_window`).
    """
    import psutil

    me = os.getpid()
    window = None
    if leader_start is not None:
        window = session_window(sid, leader_start)
        if window is None:
            return []
    out: list[psutil.Process] = []
    for proc in psutil.process_iter():
        if proc.pid == me:
            continue
        try:
            if os.getsid(proc.pid) == sid or (pgid is not None and os.getpgid(proc.pid) == pgid):
                if born_within(proc.pid, window):
                    out.append(proc)
        except OSError:
            continue
    return out


def terminate_and_wait(procs: list[psutil.Process], grace_s: float) -> list[psutil.Process]:
    """SIGTERM each; returns the ones still running after `grace_s`. For processes this code started itself
    (a demo's, a local cluster's): no session or ownership checks."""
    import psutil

    for p in procs:
        try:
            p.terminate()
        except psutil.Error:
            pass
    _gone, alive = psutil.wait_procs(procs, timeout=grace_s)
    return alive


def terminate_then_kill(procs: list[psutil.Process], grace_s: float) -> list[psutil.Process]:
    """SIGTERM each, SIGKILL what is left after `grace_s`; returns the ones that needed SIGKILL. For
    processes this code started itself (a demo's, a local cluster's): no session or ownership checks."""
    import psutil

    alive = terminate_and_wait(procs, grace_s)
    for p in alive:
        try:
            p.kill()
        except psutil.Error:
            pass
    psutil.wait_procs(alive, timeout=grace_s)
    return alive


def stop_session(sid: int, pgid: int | None, grace_s: float, on_wait=None,
                 leader_start: ProcStart | None = None,
                 own_child: subprocess.Popen | None = None) -> list[int]:
    """SIGTERM every process of the run's session and group, SIGKILL what is left after `grace_s`.

    A child that moved to its own process group is still in the session, so both are swept. Returns the
    pids it meant to signal (another user's refuse it and are not waited for: a caller that must know looks
    again). `on_wait(seconds_left)` is called while waiting, for a countdown. The caller's `own_child` is
    signalled but never reaped here: its Popen must see its real exit status, not 0.
    """
    import psutil

    own = own_child.pid if own_child is not None else None
    procs = session_members(sid, pgid, leader_start)
    signalled = [p.pid for p in procs]
    denied: set[int] = set()  # another user's: not waited for (the caller finds them still running)
    for p in procs:
        try:
            p.send_signal(signal.SIGTERM)
        except psutil.AccessDenied:
            denied.add(p.pid)
        except psutil.Error:
            pass
    others = [p for p in procs if p.pid != own and p.pid not in denied]
    deadline = time.monotonic() + grace_s
    while (others or _running(own_child)) and time.monotonic() < deadline:
        if on_wait:
            on_wait(deadline - time.monotonic())
        _gone, others = psutil.wait_procs(others, timeout=0.2) if others else ([], [])
        if not others and _running(own_child):
            time.sleep(0.05)
    # Anything new that appeared in the session meanwhile is swept too.
    leftovers = {p.pid: p for p in others}
    for p in session_members(sid, pgid, leader_start):
        if p.pid not in denied:
            leftovers.setdefault(p.pid, p)
    for p in leftovers.values():
        try:
            p.send_signal(signal.SIGKILL)
        except psutil.Error:
            pass
    psutil.wait_procs([p for p in leftovers.values() if p.pid != own], timeout=5)
    if own_child is not None:
        try:
            own_child.wait(timeout=5)
        except subprocess.TimeoutExpired:
            pass
    return signalled + [pid for pid in leftovers if pid not in signalled]


def _running(child: subprocess.Popen | None) -> bool:
    return child is not None and child.poll() is None
