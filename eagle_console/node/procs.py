"""GPU holders: who has the GPUs, and which of them are orphans that nothing will clean up.

A process holds a GPU when it has a `/dev/nvidia*` file open (seen in /proc/PID/fd) or the backend
lists it as a compute process. Holders are classified against the console's tracked runs:
tracked (in the session of a live run), orphan (reparented to PID 1 / a subreaper with a GPU context,
or left in the session of a run whose main process exited), other (everything else). Which GPU a holder
uses comes from the backend's per-GPU lists (node/gpus/attribution.py), never from the files it opened.
"""

from __future__ import annotations

import os
import re
import weakref
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import psutil

from eagle_console.node.gpus.attribution import (
    FOREIGN,
    UVM,
    DeviceFiles,
    attribute_foreign,
    attribute_local,
    nvml_use,
    pid_namespace,
)
from eagle_console.node.selfmark import marked_kind
from eagle_console.node.supervised import supervising_run
from eagle_console.processes import (
    CLOCK_TICKS,
    ProcStart,
    alive,
    hidden,
    on_this_host,
    recorded_ticks,
    start_ticks,
    ticks_at,
)

if TYPE_CHECKING:
    from eagle_console.journal import Journal, Run
    from eagle_console.node.fdcache import LinkCache
    from eagle_console.node.gpus import NodeSample
    from eagle_console.plan.model import Plan

# Init-like programs that adopt orphans (PR_SET_CHILD_SUBREAPER or PID 1 of a container).
SUBREAPER_NAMES = frozenset({"systemd", "tini", "docker-init", "dumb-init", "catatonit", "s6-svscan",
                             "runit", "supervisord", "containerd-shim", "containerd-shim-runc-v2", "conmon",
                             "lxc-start", "lxc-init"})
# Daemons that hold the device files by design and live under PID 1: never orphans.
DAEMON_NAMES = frozenset({"nvidia-persistenced", "nv-hostengine", "nvidia-fabricmanager", "dcgm-exporter"})
SGLANG_WORKER = re.compile(r"sglang::(scheduler|detokenizer)")
HIDDEN = "hidden by /proc (hidepid): another user's process"  # processes.hidden


@dataclass
class TrackedRun:
    step_id: str
    run_id: int
    sid: int
    main_pid: int
    main_alive: bool
    main_ctime: ProcStart | None = None  # the session leader's recorded start: pids, and so sids, are reused
    ended: float | None = None  # when the journal saw the run end

    def owns_session_of(self, h: Holder) -> bool:
        """Whether `h`, whose sid equals this run's, is in *this run's* session and not in a later one
        that reused the number (pid_max is 32768 on the node): the leader alive now must be the run's
        own, and `h` cannot predate the leader nor be born after the run ended."""
        if self.main_ctime is None:
            return True  # an old record without the leader's identity: the sid is all there is
        ref = recorded_ticks(self.main_ctime)
        if ref is None:
            return False  # the leader was of an earlier boot: nothing running now is its session's
        if h.start_ticks is not None and h.start_ticks < ref[0] - ref[1]:
            return False
        # The journal's end is a wall-clock time: a clock step since it only moves this bound, which the
        # leader's identity below does not depend on.
        if h.start_ticks is not None and self.ended is not None and (end := ticks_at(self.ended)) is not None \
                and h.start_ticks > end + CLOCK_TICKS:
            return False  # the journal's end is when it noticed, never before the real one: 1 s slack
        leader = start_ticks(self.sid)
        if leader is None:
            return True  # leader gone: the session it leaves behind can only be this run's
        return abs(leader - ref[0]) < ref[1]


@dataclass
class Holder:
    pid: int
    ppid: int | None
    user: str | None
    command: str
    gpus: list[int]
    used_mib: float | None  # from the backend; None when only the fd scan saw it
    cls: str = "other"  # tracked | orphan | other
    owner: str | None = None
    reason: str | None = None
    in_namespace: bool = True
    sid: int | None = None
    has_context: bool = False  # listed by the backend as a compute process
    used_by_gpu: dict[int, float] = field(default_factory=dict)
    proc: psutil.Process | None = field(default=None, repr=False, compare=False)  # kept for pid-reuse guard
    start_ticks: int | None = None  # its start in clock ticks since boot: what names it (processes.start_of)
    gpus_known: bool = True  # False: it holds a GPU (CUDA opens every device file) but which is unknown
    pgid: int | None = None
    # started from the console's own terminal session (node.holders.scan sets it against the live consoles)
    same_session: bool = False
    adopted: bool = False  # its parent is PID 1 or a subreaper that took it in, not the process that started it
    hidden: bool = False  # in this PID namespace, but /proc hides it from us (hidepid: another user's)

    @property
    def reparented(self) -> bool:
        """Its launcher is gone: adopted, or an orphan for another reason (its run's launcher exited, its
        session or job abandoned). Not a live job of anyone, whatever session it is in."""
        return self.cls == "orphan" or self.adopted

    def to_dict(self) -> dict[str, Any]:
        return {"pid": self.pid, "ppid": self.ppid, "user": self.user, "command": self.command,
                "gpus": self.gpus, "used_mib": self.used_mib, "class": self.cls, "owner": self.owner,
                "reason": self.reason, "same_session": self.same_session}


def device_minor(link: str, prefix: str) -> int | None | bool:
    """Minor number N of `PREFIX<N>`; None for PREFIXctl / -uvm / -caps (no GPU); False if not a device."""
    if not link.startswith(prefix):
        return False
    rest = link[len(prefix):]
    return int(rest) if rest.isdigit() else None


def scan_device_fds(prefix: str = "/dev/nvidia", proc_root: str = "/proc") -> dict[int, set[int | None]]:
    """pid -> device minors it has open under `prefix` (None for control/uvm files)."""
    return {pid: {int(rest) if rest.isdigit() else None for rest in names}
            for pid, names in scan_device_links(prefix, proc_root).items()}


def scan_device_files(prefix: str = "/dev/nvidia", proc_root: str = "/proc",
                      cache: LinkCache | None = None) -> dict[int, DeviceFiles]:
    """pid -> the GPU minors and whether nvidia-uvm (the CUDA runtime's file) is among its open files."""
    return {pid: DeviceFiles({int(r) for r in names if r.isdigit()}, UVM in names)
            for pid, names in scan_device_links(prefix, proc_root, cache).items()}


def scan_device_links(prefix: str = "/dev/nvidia", proc_root: str = "/proc",
                      cache: LinkCache | None = None) -> dict[int, set[str]]:
    """pid -> what follows `prefix` in its open files' links ("0", "ctl", "-uvm", "-caps/nvidia-cap1").

    One readlink per fd of every process: ~2-5 ms on a node with a few hundred processes. Entries
    that vanish mid-scan or are not readable (other users' fds without root) are skipped.
    """
    found: dict[int, set[str]] = {}
    readlink = os.readlink
    known, seen = cache.begin() if cache is not None else ({}, None)
    try:
        entries = os.listdir(proc_root)
    except OSError:
        return found
    for name in entries:
        if not name.isdigit():
            continue
        fd_dir = f"{proc_root}/{name}/fd"
        try:
            fds = os.listdir(fd_dir)
        except OSError:
            continue
        names: set[str] = set()
        for fd in fds:
            link = known.get((name, fd))
            if link is None:
                try:
                    link = readlink(f"{fd_dir}/{fd}")
                except OSError:
                    continue
            if seen is not None:
                seen[(name, fd)] = link
            if link.startswith(prefix):
                names.add(link[len(prefix):])
        if names:
            found[int(name)] = names
    if cache is not None and seen is not None:
        cache.end(seen)
    return found


def is_console_command(command: str) -> bool:
    """The console's own processes (a TUI or CLI with NVML open) are never orphans; its sim workers are."""
    return eagle_console_kind(command.split()) is not None


_PYTHON_OPTS_WITH_ARG = {"-W", "-X", "-Q"}


def eagle_console_kind(argv: list[str]) -> str | None:
    """"engine" for a supervisor or built-in action, "console" for a console or CLI, None for anything
    else (the simulated node's workers and servers included: they stand in for SGLang and are fair game).

    Recognised: `python [opts] -m eagle_console[.x]`, and `[python [opts]] .../eagle-console ...`.
    """
    if not argv:
        return None
    if argv[0].rsplit("/", 1)[-1] == "eagle-console":
        return "console"
    i = 1  # past the interpreter, through its options, to `-m MODULE` or the script
    while i < len(argv) and argv[i].startswith("-"):
        opt = argv[i]
        if opt == "-m":
            module = argv[i + 1] if i + 1 < len(argv) else ""
            return _module_kind(module)
        if opt.startswith("-m") and len(opt) > 2:  # python -meagle_console
            return _module_kind(opt[2:])
        if opt == "-c":
            return None
        i += 2 if opt in _PYTHON_OPTS_WITH_ARG else 1
    if i < len(argv) and argv[i].rsplit("/", 1)[-1] == "eagle-console":
        return "console"
    return None


def _module_kind(module: str) -> str | None:
    if module != "eagle_console" and not module.startswith("eagle_console."):
        return None
    if module.startswith("eagle_console.sim"):
        return None
    return "engine" if module.startswith("eagle_console.engine") else "console"


def _command(proc: psutil.Process) -> str:
    try:
        cmd = proc.cmdline()
        if cmd:
            return " ".join(cmd)
        return proc.name()
    except psutil.Error:
        return "?"


def is_subreaper(ppid: int | None, subreapers: Iterable[int] = ()) -> bool:
    if ppid is None:
        return False
    if ppid == 1 or ppid in set(subreapers):
        return True
    try:
        return psutil.Process(ppid).name() in SUBREAPER_NAMES
    except psutil.Error:
        return False


def classify(h: Holder, tracked: list[TrackedRun], subreapers: Iterable[int] = ()) -> None:
    """Set h.cls / owner / reason. Order matters: a run's session beats the parent-pid rule."""
    if not h.in_namespace:
        h.cls, h.reason = "other", "not in this PID namespace"
        return
    if h.hidden:
        h.cls, h.reason = "other", "hidden from this user by /proc (hidepid): not judged, never signalled"
        return
    by_sid: dict[int, TrackedRun] = {}
    for run in tracked:  # a live run wins over an ended one that had the same sid
        if h.sid != run.sid or not run.owns_session_of(h):
            continue
        if run.sid not in by_sid or (run.main_alive and not by_sid[run.sid].main_alive):
            by_sid[run.sid] = run
    run = by_sid.get(h.sid) if h.sid is not None else None
    if run is not None and run.main_alive:
        h.cls, h.owner, h.reason = "tracked", run.step_id, f"session of run {run.run_id}"
        return
    if run is not None:
        h.cls, h.owner, h.reason = "orphan", run.step_id, f"launcher of run {run.run_id} exited"
        return
    if is_console_command(h.command) or (h.proc is not None and marked_kind(h.pid) is not None):
        h.cls, h.reason = "other", "eagle-console"  # a console adopted by init (nohup, setsid) is no orphan
        return
    name = h.command.split()[0].rsplit("/", 1)[-1] if h.command else ""
    if name in DAEMON_NAMES:
        h.cls, h.reason = "other", "system daemon"
        return
    h.adopted = _adopted(h, subreapers)
    if h.adopted:
        who = "ppid 1" if h.ppid == 1 else f"reparented to subreaper {h.ppid}"
        if SGLANG_WORKER.search(h.command):
            h.cls, h.reason = "orphan", "sglang scheduler reparented"
        elif h.has_context:
            h.cls, h.reason = "orphan", who
        else:  # a daemon under init holding only the device files: not a leftover worker
            h.cls, h.reason = "other", f"{who}, no GPU memory"
        return
    if (h.has_context or SGLANG_WORKER.search(h.command)) and _abandoned_session(h):
        # an unknown subreaper adopted it: its session's leader is gone and its parent is a stranger
        h.cls, h.reason = "orphan", f"session leader {h.sid} exited, parent {h.ppid} outside the session"
        return
    if (h.has_context or SGLANG_WORKER.search(h.command)) and _abandoned_group(h):
        # the same inside one session: a shell job (its own process group) whose leader died, adopted by a
        # subreaper we do not know by name (prctl(PR_SET_CHILD_SUBREAPER) leaves no trace in /proc)
        h.cls, h.reason = "orphan", f"job leader {h.pgid} exited, parent {h.ppid} outside the job"
        return
    h.cls, h.reason = "other", supervising_run(h.ppid)  # a live run of a plan not given here, or None


def _abandoned_session(h: Holder) -> bool:
    if h.sid is None or h.ppid is None or h.sid in (0, h.pid):
        return False
    if psutil.pid_exists(h.sid):
        return False
    try:
        return os.getsid(h.ppid) != h.sid
    except OSError:
        return False


def _adopted(h: Holder, subreapers: Iterable[int] = ()) -> bool:
    """Its parent is PID 1 or a subreaper *that adopted it*, not a shell that started it.

    A container whose PID 1 is the operator's shell (`docker run -it … bash`, `unshare --pid --fork sh`)
    is the parent of every job started there: a PID 1 that is not a known init, in the holder's own
    session, adopted it only if the job it was started in is gone (its process group's leader exited).
    """
    if not is_subreaper(h.ppid, subreapers):
        return False
    if h.ppid != 1 or _name(1) in SUBREAPER_NAMES:  # a subreaper known by name or pid is no one's shell
        return True
    try:
        parent_sid = os.getsid(1)
    except OSError:
        return True
    if parent_sid != h.sid:
        return True
    return h.pgid not in (None, 0, h.pid) and not psutil.pid_exists(h.pgid)


def _name(pid: int) -> str | None:
    try:
        return psutil.Process(pid).name()
    except psutil.Error:
        return None


def _abandoned_group(h: Holder) -> bool:
    """Its process group's leader is gone and its parent is neither in the group nor the session's leader.

    The session leader is excluded because a job-control shell is the parent of every stage of a pipeline:
    in `cat prompts | python serve.py` the group is cat's, and cat may exit first while the shell lives on.
    """
    if h.pgid is None or h.ppid is None or h.pgid in (0, h.pid) or h.ppid in (h.sid, 1):
        return False
    if psutil.pid_exists(h.pgid):
        return False
    try:
        return os.getpgid(h.ppid) != h.pgid
    except OSError:
        return False


@dataclass
class HolderScan:
    holders: list[Holder]
    pid_namespace: str  # "local" | "foreign": whether the backend's pids are this namespace's


def scan_holders(sample: NodeSample | None, tracked: list[TrackedRun] | None = None, *,
                 device_prefix: str = "/dev/nvidia", proc_root: str = "/proc",
                 subreapers: Iterable[int] = (), include_self: bool = False) -> list[Holder]:
    """Every GPU holder (fd scan merged with the backend's process lists), classified."""
    return scan_node(sample, tracked, device_prefix=device_prefix, proc_root=proc_root,
                     subreapers=subreapers, include_self=include_self).holders


def scan_node(sample: NodeSample | None, tracked: list[TrackedRun] | None = None, *,
              device_prefix: str = "/dev/nvidia", proc_root: str = "/proc",
              subreapers: Iterable[int] = (), include_self: bool = False,
              links: LinkCache | None = None) -> HolderScan:
    """`scan_holders` plus whether the backend's pids are ours; call it after `sample` was taken, so a
    process that started in between is only in the fd scan, never only in the backend's lists."""
    tracked = tracked or []
    me = os.getpid()
    fds = scan_device_files(device_prefix, proc_root, links)  # links: a pane's cache, never a kill's
    nvml = nvml_use(sample)
    # The namespace is judged with this process's own device files still in: the console holding a GPU
    # (its NVML pid backed by its fds) is evidence that NVML's pids are ours.
    namespace = pid_namespace(set(nvml), set(fds), proc_root)
    if not include_self:
        fds.pop(me, None)
    minor_to_index = sample.gpu_by_minor() if sample is not None else {}
    gpu_count = len(sample.gpus) if sample is not None else 0
    if namespace == FOREIGN:
        uses, unbacked = attribute_foreign(fds, nvml, minor_to_index, gpu_count)
    else:
        if not include_self:
            nvml.pop(me, None)
        uses, unbacked = attribute_local(fds, nvml, minor_to_index, gpu_count, proc_root)
    out: list[Holder] = []
    for pid in sorted(uses):
        use = uses[pid]
        known = list(use.used_by_gpu.values())
        h = Holder(pid=pid, ppid=None, user=None, command="", gpus=use.gpus or [],
                   used_mib=sum(known) if known else None, has_context=use.has_context,
                   used_by_gpu=dict(use.used_by_gpu), gpus_known=use.gpus is not None)
        _read_process(h)
        classify(h, tracked, subreapers)
        out.append(h)
    for pid in sorted(unbacked):  # kept and labelled (state.md), never signalled
        per_gpu = {k: v for k, v in unbacked[pid].items() if v is not None}
        h = Holder(pid=pid, ppid=None, user=None, gpus=sorted(unbacked[pid]), has_context=True,
                   command=_unbacked_command(pid, namespace),
                   used_mib=sum(per_gpu.values()) if per_gpu else None, used_by_gpu=per_gpu, in_namespace=False)
        classify(h, tracked, subreapers)
        out.append(h)
    return HolderScan(out, namespace)


def _unbacked_command(pid: int, namespace: str) -> str:
    if namespace == FOREIGN:
        return "host pid (not in this container)"
    if psutil.pid_exists(pid):  # a local process has that number, but no device file open: not it
        return f"No Such Process (local pid {pid} has no /dev/nvidia* open)"
    return "No Such Process"


def _read_process(h: Holder) -> None:
    try:
        proc = psutil.Process(h.pid)
        with proc.oneshot():
            h.ppid = proc.ppid()
            h.command = _command(proc)
            try:
                h.user = proc.username()
            except (KeyError, psutil.Error):  # uid without a passwd entry
                h.user = str(proc.uids().real)
        h.sid = os.getsid(h.pid)
        h.pgid = os.getpgid(h.pid)
        h.start_ticks = start_ticks(h.pid)
        h.same_session = bool(h.sid) and h.sid == os.getsid(0)  # node.holders.scan adds other consoles'
        h.proc = proc
    except (psutil.NoSuchProcess, ProcessLookupError):  # exited since the scan, or hidden from us
        if hidden(h.pid):  # in this namespace, another user's: h.proc stays None, so it is never signalled
            h.hidden, h.command = True, HIDDEN
        else:
            h.in_namespace = False
            h.command = "No Such Process"
    except (psutil.AccessDenied, PermissionError):
        h.command = h.command or "?"


def tracked_runs_for(plan: Plan | None) -> list[TrackedRun]:
    """`tracked_runs` of `plan`'s journal, opened for this one call (the CLI's way)."""
    if plan is None:
        return []
    from eagle_console.journal import Journal

    journal = Journal.for_plan(plan)
    try:
        return tracked_runs(journal)
    finally:
        journal.close()


def tracked_runs(journal: Journal) -> list[TrackedRun]:
    """Runs that have a session: live ones own their holders, ended ones orphan them; in start order.

    The console passes its own open journal, so its once-a-second GPU poll opens no new connection. An ended
    run's record never changes (the journal is append-only), so it is built once per journal and only the
    runs begun since the last call, or still open then, are looked at again: the poll's cost does not grow
    with the history (it walked all 6,250 runs of a 50,000-event journal each time; issue 31).
    """
    known = _ENDED_RUNS.get(journal)
    if known is None:
        known = _ENDED_RUNS[journal] = KnownRuns()
    return known.tracked(journal)


class KnownRuns:
    """tracked_runs' memory of one journal: the ended runs' records (in start order) and the open runs."""

    def __init__(self) -> None:
        self.seen = 0  # how many of runs() (start order) were looked at
        self.ended: list[TrackedRun] = []
        self.open: list[Run] = []  # runs not ended when last seen (their session maybe not recorded yet)

    def tracked(self, journal: Journal) -> list[TrackedRun]:
        runs = journal.runs()
        if len(runs) < self.seen:  # the journal was replaced under us: start again
            self.__init__()
        by_id = {r.id: r for r in runs[self.seen:]}
        self.seen = len(runs)
        for run in self.open:  # their latest record (a session recorded, an end, a derived end)
            by_id.setdefault(run.id, journal.run(run.id) or run)
        live: list[TrackedRun] = []
        self.open = []
        newly_ended = False
        for run in sorted(by_id.values(), key=lambda r: r.id):
            if run.node or not on_this_host(run.host):  # another node's or machine's: its pids are that one's
                continue
            if not (run.sid and run.pid):
                if run.ended is None:  # its session not recorded yet (record_proc comes after the start)
                    self.open.append(run)
                continue
            if run.ended is not None:
                self.ended.append(TrackedRun(step_id=run.step_id, run_id=run.id, sid=run.sid, main_pid=run.pid,
                                             main_alive=False, main_ctime=run.pid_ctime, ended=run.ended))
                newly_ended = True
                continue
            self.open.append(run)
            live.append(TrackedRun(step_id=run.step_id, run_id=run.id, sid=run.sid, main_pid=run.pid,
                                   main_alive=alive(run.pid, run.pid_ctime), main_ctime=run.pid_ctime, ended=None))
        if newly_ended:  # runs end out of start order; classify() keeps the first of two with one sid
            self.ended.sort(key=lambda t: t.run_id)
        # start order, as classify() expects (two sorted lists: timsort merges them in one pass)
        return sorted([*self.ended, *live], key=lambda t: t.run_id) if live else list(self.ended)


_ENDED_RUNS: weakref.WeakKeyDictionary[Journal, KnownRuns] = weakref.WeakKeyDictionary()


def gpus_document(sample: NodeSample, holders: list[Holder], pid_namespace: str = "local") -> dict[str, Any]:
    """The `gpus --json` document of cli.md (also what the GPUs pane draws). A holder whose GPU is
    unknown is under no GPU (`orphans --json` lists it); the GPU's memory_used_mib still counts it."""
    from eagle_console.node.gpus.unseen import unattributed_mib

    by_gpu: dict[int, list[Holder]] = {}
    for h in holders:
        for g in h.gpus:
            by_gpu.setdefault(g, []).append(h)
    gpus = []
    for g in sample.gpus:
        procs = [{"pid": h.pid, "used_mib": h.used_by_gpu.get(g.index), "command": h.command,
                  "class": h.cls, "owner": h.owner, "same_session": h.same_session}
                 for h in by_gpu.get(g.index, [])]
        gpus.append({
            "index": g.index, "name": g.name, "uuid": g.uuid, "memory_total_mib": g.memory_total_mib,
            "memory_used_mib": g.memory_used_mib, "unattributed_mib": unattributed_mib(g),
            "utilization_pct": g.utilization_pct,
            "temperature_c": g.temperature_c, "power_w": g.power_w, "power_limit_w": g.power_limit_w,
            "pcie_gen": g.pcie_gen, "pcie_width": g.pcie_width, "processes": procs,
        })
    return {"backend": sample.backend, "error": sample.error, "driver": sample.driver,
            "pid_namespace": pid_namespace, "gpus": gpus}
