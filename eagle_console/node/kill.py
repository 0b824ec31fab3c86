"""Signal GPU holders safely: SIGTERM, wait the grace period, SIGKILL survivors, wait for the memory.

Signals go through the psutil.Process objects kept from the listing: psutil refuses a pid that was
reused since (create time differs), so a recycled pid is never hit. Some processes are never signalled
whatever the caller asks: PID 1, this process and its ancestors (the supervisor, the console, the
shell), every eagle-console process (consoles, CLIs, supervisors and built-in actions of any run),
the live jobs of the console's terminal (a process of this process's or a console's session whose parent
is still there: the operator's interactive `python`, a server they started with `&`), processes outside
this PID namespace, and other users' processes unless we are root and the operator picked them one by one.

An orphan of the console's own session is *not* protected: a server started from the operator's shell
and abandoned (launcher killed, Ctrl+C'd with workers that ignore SIGINT) leaves its workers in that
session, reparented to PID 1 or a subreaper. They are what `K` exists for; they are marked
`same_session` so every face can say they were started from this terminal.

The grace between SIGTERM and SIGKILL is parsed once, in node/grace.py, for every face (`--grace`,
`with.grace`, EAGLE_CONSOLE_KILL_GRACE) and for the engine's timeouts and rollbacks.
"""

from __future__ import annotations

import os
import re
import signal
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import psutil

from eagle_console.node.procs import Holder, eagle_console_kind
from eagle_console.node.selfmark import CONSOLE, marked_processes

if TYPE_CHECKING:
    from eagle_console.node.gpus import GpuBackend

POLL_S = 0.05
Progress = Callable[[float, list[int]], None]  # (seconds left of the grace, pids still alive)

LIVE_JOB = "a live job of the console's terminal (parent {ppid} is alive)"
MAYBE_LIVE_JOB = "maybe a live job of the console's terminal (parent {ppid} is alive; the session's leader is " \
    "outside this PID namespace)"

def protected_pids() -> set[int]:
    """PID 1, this process and every ancestor of it."""
    pids = {1, os.getpid()}
    try:
        pids.update(p.pid for p in psutil.Process().parents())
    except psutil.Error:
        pass
    return pids


@dataclass(frozen=True)
class Protection:
    """The processes no kill may signal, whatever its scope, read from the node when the kill is decided.

    ancestors: PID 1, this process and its ancestors (the supervisor of the run doing the kill).
    consoles: every eagle-console process: a console, a CLI (`run --wait`), a supervisor or a built-in
    action of any run (by the package file it holds open, node/selfmark.py; by command line; or a
    supervisor the journal recorded).
    sessions: this process's session and the sessions of the consoles and CLIs (their terminal, their
    helpers); not the sessions of supervisors and actions, which are the runs' own and hold their servers.
    """

    ancestors: frozenset[int]
    consoles: frozenset[int]
    sessions: frozenset[int]
    # A console whose session leader is outside this PID namespace reads its session as 0, as does every
    # process of any session led from outside: such a holder may be in the console's session.
    unseen_session: bool = False


def protection(consoles: Iterable[int] = ()) -> Protection:
    """Scan the node for eagle-console processes: the marker file each holds open (what no symlink, `-c`
    or process title hides), else the command line; `consoles` adds pids known otherwise (the journal's
    live supervisors)."""
    found = set(consoles)
    sessions = {_sid(os.getpid())}
    marked = marked_processes()
    for proc in psutil.process_iter(["cmdline"]):
        argv = proc.info.get("cmdline") or []
        kind = marked.get(proc.pid) or eagle_console_kind(argv)
        if kind is None:
            continue
        found.add(proc.pid)
        if kind == CONSOLE:
            sessions.add(_sid(proc.pid))
    # None: gone or unreadable; 0: a leader outside this PID namespace (docker exec without a tty, unshare)
    return Protection(frozenset(protected_pids()), frozenset(found), frozenset(s for s in sessions if s),
                      unseen_session=0 in sessions)


def in_console_session(h: Holder, protected: Protection) -> bool:
    """Started from the terminal of this process or of a console (a session led from outside this PID
    namespace reads as 0: then any holder of such a session may be)."""
    if h.sid is not None and h.sid in protected.sessions:
        return True
    return h.sid == 0 and protected.unseen_session


def _sid(pid: int) -> int | None:
    try:
        return os.getsid(pid)
    except OSError:
        return None


def current_user() -> str | None:
    """This process's user, as psutil names every holder's (its real uid)."""
    try:
        return psutil.Process().username()
    except (psutil.Error, KeyError):
        return None


def refusal(h: Holder, explicit: Iterable[int] = (), protected: Protection | None = None) -> str | None:
    """Why `h` must not be signalled, or None if it may be."""
    protected = protection() if protected is None else protected
    if not h.in_namespace or h.proc is None:
        return "not in this PID namespace" if not h.in_namespace else "process not readable"
    if h.pid == 1:
        return "PID 1"
    if h.pid == os.getpid():
        return "this process"
    if h.pid in protected.consoles:
        return "eagle-console process"
    if h.pid in protected.ancestors:
        return "an ancestor of this process"
    if in_console_session(h, protected) and not h.reparented:
        return (LIVE_JOB if h.sid else MAYBE_LIVE_JOB).format(ppid=h.ppid)
    me = current_user()
    if h.user is not None and me is not None and h.user != me:
        if os.geteuid() != 0:
            return f"belongs to {h.user}"
        if h.pid not in set(explicit):
            return f"belongs to {h.user} (root kills it only when picked)"
    return None


def _alive(proc: psutil.Process) -> bool:
    try:
        return proc.is_running() and proc.status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False
    except psutil.AccessDenied:
        return True


def _signal(proc: psutil.Process, sig: int) -> str:
    """"sent", "gone" (exited, or its pid now names another process) or "denied"."""
    try:
        proc.send_signal(sig)  # psutil checks the create time first: a reused pid raises NoSuchProcess
        return "sent"
    except psutil.NoSuchProcess:
        return "gone"
    except psutil.AccessDenied:
        return "denied"


def _wait(procs: list[psutil.Process], timeout: float, progress: Progress | None) -> list[psutil.Process]:
    deadline = time.monotonic() + timeout
    last_tick = None
    while True:
        alive = [p for p in procs if _alive(p)]
        left = deadline - time.monotonic()
        if not alive or left <= 0:
            return alive
        if progress is not None and (last_tick is None or int(left) != last_tick):
            last_tick = int(left)
            progress(left, [p.pid for p in alive])
        time.sleep(POLL_S)


def _used_by_gpu(backend: GpuBackend | None) -> tuple[dict[int, float], set[int]]:
    if backend is None:
        return {}, set()
    sample = backend.sample()
    used = {g.index: g.memory_used_mib for g in sample.gpus if g.memory_used_mib is not None}
    listed = {p.pid for g in sample.gpus for p in (g.processes or [])}
    return used, listed


RELEASE_TOLERANCE_MIB = 64.0  # NVML's per-process figure is a little under what the total drops by
SETTLE_S = 1.0  # with nothing known per GPU: the totals unchanged this long


def _released(backend: GpuBackend | None, before: dict[int, float], expected: dict[int, float],
              dead: set[int], timeout: float) -> tuple[dict[int, float], set[int]]:
    after, listed = _used_by_gpu(backend)
    if backend is None or not dead:
        return after, listed
    deadline = time.monotonic() + timeout
    stable_since, last = time.monotonic(), after
    while time.monotonic() < deadline:
        known = any(v > 0 for v in expected.values())
        dropped = all(before.get(g, 0.0) - after.get(g, before.get(g, 0.0)) >= mib - RELEASE_TOLERANCE_MIB
                      for g, mib in expected.items())
        if after != last:
            stable_since, last = time.monotonic(), after
        settled = time.monotonic() - stable_since >= SETTLE_S
        if not (dead & listed) and (dropped if known else settled):
            break
        time.sleep(0.1)
        after, listed = _used_by_gpu(backend)
    return after, listed


def kill_holders(holders: list[Holder], *, backend: GpuBackend | None = None, grace: float = 10.0,
                 sig: int = signal.SIGTERM, explicit: Iterable[int] = (), progress: Progress | None = None,
                 release_timeout: float = 30.0, say: Callable[[str], None] | None = None,
                 consoles: Iterable[int] = ()) -> dict[str, Any]:
    """Stop `holders`; returns the plain dict the caller journals:
    {"killed": [pid], "survivors": [pid], "freed_mib": {"0": MiB}, "refused": [{"pid", "reason"}]}.
    `consoles` are eagle-console pids known to the caller (live supervisors in the journal).
    """
    say = say or (lambda _msg: None)
    protected = protection(consoles)  # read again now: a console may have started since the scan
    targets: list[Holder] = []
    refused: list[dict[str, Any]] = []
    for h in holders:
        why = refusal(h, explicit, protected)
        if why:
            refused.append({"pid": h.pid, "reason": why})
            say(f"not signalling {h.pid} ({h.command[:60]}): {why}")
        else:
            targets.append(h)
    gpus = sorted({g for h in targets for g in h.gpus})
    before, _ = _used_by_gpu(backend)
    signalled: list[psutil.Process] = []
    gone_before: list[int] = []
    for h in targets:
        assert h.proc is not None
        name = signal.Signals(sig).name
        outcome = _signal(h.proc, sig)
        if outcome == "sent":
            say(f"{name} -> {h.pid} {h.command[:80]}")
            signalled.append(h.proc)
        elif outcome == "denied":
            refused.append({"pid": h.pid, "reason": "permission denied"})
            say(f"not allowed to signal {h.pid}")
        else:
            gone_before.append(h.pid)
            say(f"{h.pid} already gone (or its pid was reused): not signalled")
    alive = _wait(signalled, grace, progress) if signalled else []
    for proc in alive:
        if _signal(proc, signal.SIGKILL) == "sent":
            say(f"SIGKILL -> {proc.pid} (still alive after {grace:g}s)")
    survivors = _wait(alive, 5.0, None) if alive else []
    dead = [p.pid for p in signalled if p not in survivors]
    # GPU memory is released only once the process has fully exited and the driver has torn down the
    # context, and a real driver drops a process from its lists before its memory leaves the used total;
    # in a container the lists hold host pids that never equal ours. So wait until the backend lists none
    # of them *and* each GPU's total fell by what the killed held there (or, not knowing it, stopped falling).
    aimed = set(gpus)
    if any(not h.gpus for h in targets):  # a GPU unknown (foreign pids, every device file open): all of them
        gpus = sorted(before)
    expected = {g: sum((h.used_by_gpu or {}).get(g, 0.0) for h in targets if h.pid in dead) for g in gpus}
    after, listed = _released(backend, before, expected, set(dead), release_timeout)
    freed = {g: round(max(0.0, before[g] - after.get(g, before[g])), 1) for g in gpus if g in before}
    # a GPU only watched because a target's was unknown is said where memory came back, not as "0 MiB"
    freed = {str(g): mib for g, mib in freed.items() if mib > 0 or g in aimed}
    return {"killed": dead, "survivors": [p.pid for p in survivors], "freed_mib": freed, "refused": refused,
            "gone": gone_before}


SCOPES = ("orphans", "all", "match")


def select_targets(holders: list[Holder], scope: str = "orphans", match: Iterable[str] = (),
                   gpus: Iterable[int] | None = None) -> list[Holder]:
    """The holders a kill in `scope` would signal (before the never-signal rules of `refusal`).

    orphans: class orphan. all: every holder with GPU memory, plus orphans; never the console itself
    or a system daemon. match: holders whose command line matches one of the regexes.
    `gpus` limits any scope to holders on those GPU indices.
    """
    if scope not in SCOPES:
        raise ValueError(f"scope must be one of {', '.join(SCOPES)}, not {scope!r}")
    patterns = [re.compile(p) for p in match]
    if scope == "match" and not patterns:
        raise ValueError("scope 'match' needs `match` regexes")
    wanted = set(gpus) if gpus is not None else None
    out = []
    for h in holders:
        if wanted is not None and not wanted & set(h.gpus):
            continue
        if scope == "orphans":
            ok = h.cls == "orphan"
        elif scope == "all":
            ok = h.cls == "orphan" or (h.has_context and h.reason not in ("eagle-console", "system daemon"))
        else:
            ok = any(p.search(h.command) for p in patterns)
        if ok:
            out.append(h)
    return out
