"""The supervisor: one small process per run, in its own session, that owns the action.

    python -m eagle_console.engine.supervise SPEC.json [--detach]      (a run on this machine)
    python -m eagle_console.engine.supervise --job-spec PATH          (a Ray job's, cluster/handoff.py)

The spec (the plan's `[env]`: an HF token) is always a private file, never on the command line, which
every local user reads (`ps`); a built-in's call goes to its process in its environment (pyenv.child_command).

It starts the action (in a session of its own, output straight into the step's log), records `::result`
lines (and keeps the last `::reason` line, a built-in's one-line why, for the run's reason if it fails), enforces the timeout on the whole session, checks readiness of services, runs the `check`, and
records the exit in the journal. With --detach it forks once and the parent exits at once, so the
console is never the parent of a supervisor (nor of an action): quitting the console, a SIGHUP of its
terminal or a kill -9 of it leaves the run going.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

from eagle_console.engine.spec import ActionSpec, RollbackSpec, UndoItem, read_spec
from eagle_console.journal import EventKind, Journal, exitslot, heldslot
from eagle_console.journal.recorder import WRITE_ERRORS, Recorder, persist, warn
from eagle_console.node import selfmark
from eagle_console.node.tail import NotRegularFile, open_regular
from eagle_console.processes import alive, session_members, start_of, stop_session, this_host
from eagle_console.pyenv import child_command, forget_own_entry, shown
from eagle_console.statedir import private_dirs

RESULT_RE = re.compile(r"^::result\s+([A-Za-z0-9_.\-]+)=(.*)$")
LOG_ROOM_BYTES = 64 * 1024  # less free on the log's disk than a few lines' blocks: its writes are refused
REASON_RE = re.compile(r"^::reason\s+(.+)$")  # a built-in's failure, for the run's reason (engine/action.py)
POLL_S = 0.1
TIMEOUT_EXIT = 124  # what timeout(1) reports for a command it stopped


MAX_LINE = 64 << 10  # the longest line scanned for `::result`; longer ones are skipped, not kept


class LogScanner:
    """Reads complete new lines appended to the step log since `offset` (the run's own part of it)."""

    def __init__(self, path: Path, offset: int) -> None:
        self.path, self.offset, self._partial = path, offset, b""
        self._skipping = False  # inside a line longer than MAX_LINE: its rest is dropped up to its newline

    def read(self) -> list[str]:
        try:
            with os.fdopen(open_regular(self.path), "rb") as f:  # a FIFO or device is never read
                f.seek(self.offset)
                data = f.read(4 << 20)
        except OSError:
            return []
        self.offset += len(data)
        chunks = (self._partial + data).split(b"\n")
        self._partial = chunks.pop()
        if self._skipping and chunks:
            chunks.pop(0)  # the end of the over-long line: no `::result` is that long
            self._skipping = False
        if len(self._partial) > MAX_LINE:  # a step printing without newlines must not grow the supervisor
            self._partial, self._skipping = b"", True
        return [c.decode("utf-8", "replace").rstrip("\r") for c in chunks]


def parse_result(line: str) -> tuple[str, float | str] | None:
    """`::result NAME=VALUE` → (name, number or string)."""
    m = RESULT_RE.match(line.strip())
    if not m:
        return None
    raw = m.group(2).strip()
    for conv in (int, float):
        try:
            return m.group(1), conv(raw)
        except ValueError:
            pass
    return m.group(1), raw


def parse_reason(line: str) -> str | None:
    """`::reason TEXT` → TEXT (what a failed built-in says went wrong)."""
    m = REASON_RE.match(line.strip())
    return m.group(1).strip() if m else None


def failure_reason(code: int, said: str | None) -> str:
    """`exit status 1: gpu.kill: cannot read the GPUs ...`: the exit, and why when the action said so."""
    return describe_exit(code) + (f": {said}" if said else "")


def log_disk_full(log: Path) -> str:
    """`; its log's disk is full (…)`, said after a failure when the log's disk has no room left: the action
    writes its output there, and a write refused (`echo: write error`, Python's OSError) can be why it failed,
    its last lines lost with it. Nothing when there is room (or the disk cannot be asked)."""
    import shutil

    try:
        free = shutil.disk_usage(log.parent).free
    except OSError:
        return ""
    if free >= LOG_ROOM_BYTES:
        return ""
    return (f"; its log's disk is full ({free // 1024} KiB free on the disk of {log.parent}): its output was "
            f"cut there, and a refused write may be why it failed")


def describe_exit(code: int) -> str:
    if code < 0:
        try:
            return f"killed by {signal.Signals(-code).name}"
        except ValueError:
            return f"killed by signal {-code}"
    return f"exit status {code}"


def _ends_mid_line(fd: int) -> bool:
    """Whether the file open (append only) on `fd` ends without a newline: its last byte, read through a
    second descriptor on the same file (/proc/self/fd: never another file swapped in at the path)."""
    try:
        size = os.fstat(fd).st_size
        if size == 0:
            return False
        reader = os.open(f"/proc/self/fd/{fd}", os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return False
    try:
        return os.pread(reader, 1, size - 1) not in (b"\n", b"")
    except OSError:
        return False
    finally:
        os.close(reader)


class Supervisor:
    def __init__(self, journal: Journal, log: Path) -> None:
        self.journal, self.log_path = journal, log
        private_dirs(log.parent)
        self.terminate_reason: str | None = None
        signal.signal(signal.SIGHUP, signal.SIG_IGN)
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        signal.signal(signal.SIGTERM, self._on_term)

    def _on_term(self, signum: int, frame: object) -> None:
        self.terminate_reason = "the supervisor received SIGTERM"

    def note(self, text: str) -> None:
        try:  # only a regular file: opening a FIFO for writing blocks until a reader comes
            fd = open_regular(self.log_path, append=True)
        except OSError as exc:  # not a regular file, or an I/O error → the supervisor's own log (stderr)
            warn(f"{text} (not in the step log: {exc})")
            return
        try:
            # on a line of its own: after a last line without a newline (`printf`, a progress bar's last
            # redraw) the note was glued to it, and the log panes and parsers read one mangled line
            cut = _ends_mid_line(fd)
            with os.fdopen(fd, "a", encoding="utf-8") as f:
                f.write(("\n" if cut else "") + f"[eagle-console] {text}\n")
        except OSError as exc:  # a full disk must not stop the supervisor from recording the exit
            warn(f"{text} (not in the step log: {exc})")

    def start(self, argv: list[str], cwd: str, env: dict[str, str]) -> subprocess.Popen:
        """Start `argv` with `env` (the spec's overrides) laid over the operator's environment."""
        private_dirs(self.log_path.parent)
        try:  # the child writes here directly: no pipe to break if we die
            log = open_regular(self.log_path, append=True)
        except NotRegularFile as exc:  # a FIFO/device log: run anyway (timeout, SIGTERM), output dropped
            print(f"[eagle-console] the action's output is discarded: {exc}", file=sys.stderr, flush=True)
            log = subprocess.DEVNULL
        argv, child_env = child_command(argv, env)  # a built-in's call by its env, not its argv
        try:
            return subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                                    cwd=cwd, env=child_env, start_new_session=True)
        finally:
            if log >= 0:
                os.close(log)

    def supervise(self, child: subprocess.Popen, scanner: LogScanner, on_line: Callable[[str], None],
                  deadline: Callable[[], float | None], grace_s: float,
                  poll_extra: Callable[[], None] | None = None) -> tuple[int, str | None]:
        """Wait for `child`; returns (exit code, why it was stopped or None).

        `deadline()` is asked on every poll: a service's deadline disappears once it is ready.
        """
        stopped: str | None = None
        while True:
            for line in scanner.read():
                on_line(line)
            rc = child.poll()
            if rc is not None:
                break
            if poll_extra:
                poll_extra()
            why = self.terminate_reason
            limit = deadline()
            if limit is not None and time.monotonic() > limit:
                why = "timeout"
            if why and not stopped:
                stopped = why
                self.note(f"stopping the action's session ({why}): SIGTERM, then SIGKILL after {grace_s:g}s")
                stop_session(child.pid, child.pid, grace_s, own_child=child)
            time.sleep(POLL_S)
        for line in scanner.read():
            on_line(line)
        return rc, stopped


def _log_size(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:
        return 0


def keep_exit(journal: Journal, run_id: int, step_id: str, recorder: Recorder | None = None, **end: Any) -> bool:
    """Record the run's end, after what the recorder still holds; on a journal that cannot take it (a full
    disk) keep it in the run's exit slot and retry until it can: the run is never `lost` for want of space
    (journal/exitslot.py). What could not be recorded at all is added to the reason."""
    if recorder is not None and (missing := recorder.not_recorded()):
        end["reason"] = f"{end['reason']}; {missing}" if end.get("reason") else missing
    kept_said = False
    while True:
        try:
            if recorder is None or recorder.flush():
                ended = journal.end_run(run_id, step_id, **end)
                if recorder is not None:
                    recorder.release()
                return ended
            why = "the journal cannot take the run's held records"
        except WRITE_ERRORS as exc:
            why = str(exc)
        if not kept_said:  # the readers take the exit from the slot if we die before the journal takes it
            kept = journal.path is not None and exitslot.keep(exitslot.exit_slot(journal.path.parent, run_id), end)
            warn(f"{why}; the exit is {'kept in the run exit slot' if kept else 'NOT kept'}; "
                 f"retrying every {exitslot.RETRY_S:g}s")
            kept_said = True
        time.sleep(exitslot.RETRY_S)


def open_journal(spec: ActionSpec | RollbackSpec) -> Journal:
    """The plan's journal; none for a Ray job's supervisor (spec.journal ""): it reports on its output."""
    if not spec.journal:
        from eagle_console.cluster.job_events import JobEvents

        return JobEvents()  # type: ignore[return-value]
    return Journal(Path(spec.journal))


def job_log() -> str:
    """A Ray job's supervisor logs into its own stdout, the job's log file (a regular file Ray opened)."""
    return os.path.realpath("/proc/self/fd/1")


def run_action(spec: ActionSpec) -> int:
    journal = open_journal(spec)
    log = Path(job_log() if spec.log == "-" else spec.log)
    sup = Supervisor(journal, log)
    me = os.getpid()
    slot = heldslot.held_slot(Path(spec.journal).parent, spec.run_id) if spec.journal else None
    recorder = Recorder(journal, spec.run_id, spec.step_id, slot)
    try:
        journal.record_proc(spec.run_id, spec.step_id, supervisor_pid=me, supervisor_ctime=start_of(me),
                            host=this_host())
        label = journal.run_label(spec.run_id)
    except WRITE_ERRORS as exc:  # unseen, a live supervisor would be taken for one that never started
        reason = f"{exitslot.NOT_STARTED}: its supervisor could not record itself in the journal ({exc})"
        sup.note(reason)
        keep_exit(journal, spec.run_id, spec.step_id, exit_code=None, outcome="failed", reason=reason,
                  step_status="failed")
        return 1
    sup.note(f"{label} started at {time.strftime('%Y-%m-%d %H:%M:%S')}: {shown(spec.argv)}")
    ready_seen = False
    said: str | None = None  # the action's last `::reason`
    ready_re = re.compile(spec.ready.log) if spec.ready and spec.ready.log else None

    def on_line(line: str) -> None:
        nonlocal ready_seen, said
        res = parse_result(line)
        if res:
            recorder.result(res[0], res[1])
        said = parse_reason(line) or said
        if spec.service and not ready_seen and ready_re and ready_re.search(line):
            ready_seen = True
            recorder.ready()
            sup.note("ready (log line matched)")

    last_http = 0.0

    def poll_http() -> None:
        nonlocal ready_seen, last_http
        if not spec.service or ready_seen or not (spec.ready and spec.ready.http):
            return
        if time.monotonic() - last_http < 0.5:
            return
        last_http = time.monotonic()
        if http_ok(spec.ready.http):
            ready_seen = True
            recorder.ready()
            sup.note(f"ready ({shown_url(spec.ready.http)} answered 2xx)")

    started = time.monotonic()
    limit = spec.timeout_s
    if spec.service and spec.ready and spec.ready.timeout_s:
        limit = spec.ready.timeout_s
    scanner = LogScanner(log, _log_size(log))
    try:
        child = sup.start(spec.argv, spec.cwd, spec.env)
    except OSError as exc:
        sup.note(f"could not start the action: {exc}")
        keep_exit(journal, spec.run_id, spec.step_id, recorder, exit_code=127, outcome="failed",
                        reason=f"could not start: {exc}", step_status="failed")
        return 1
    recorder.proc(pid=child.pid, pid_ctime=start_of(child.pid), pgid=child.pid, sid=child.pid)

    def deadline() -> float | None:
        if limit is None or (spec.service and ready_seen):
            return None
        return started + limit

    def poll_extra() -> None:
        recorder.retry()  # what the journal could not take, written once it can
        poll_http()

    rc, stopped = sup.supervise(child, scanner, on_line, deadline, spec.grace_s, poll_extra)
    if not spec.service:
        leftovers = stop_session(child.pid, child.pid, min(spec.grace_s, 5.0))
        if leftovers:
            sup.note(f"stopped {len(leftovers)} background process(es) the action left behind: {leftovers}")
    if stopped == "timeout":
        reason = f"timed out after {limit:g}s; its session was stopped"
        sup.note(reason)
        keep_exit(journal, spec.run_id, spec.step_id, recorder, exit_code=TIMEOUT_EXIT, outcome="timeout", reason=reason,
                        step_status="failed")
        return 1
    if stopped:
        keep_exit(journal, spec.run_id, spec.step_id, recorder, exit_code=rc, outcome="failed", reason=stopped,
                        step_status="failed")
        return 1
    if spec.service:
        return _service_ended(journal, sup, spec, rc, ready_seen, recorder)
    if rc != 0:
        reason = failure_reason(rc, said) + log_disk_full(log)
        sup.note(f"the action ended: {reason}")
        keep_exit(journal, spec.run_id, spec.step_id, recorder, exit_code=rc, outcome="failed", reason=reason,
                        step_status="failed")
        return 1
    if spec.check_argv:
        sup.note(f"check: {shown(spec.check_argv)}")
        check_deadline = None if spec.timeout_s is None else started + spec.timeout_s
        try:
            checker = sup.start(spec.check_argv, spec.cwd, spec.env)
        except OSError as exc:
            keep_exit(journal, spec.run_id, spec.step_id, recorder, exit_code=0, outcome="failed",
                            reason=f"the check could not start: {exc}", step_status="failed")
            return 1
        crc, cstopped = sup.supervise(checker, scanner, on_line, lambda: check_deadline, spec.grace_s)
        if crc != 0 or cstopped:
            reason = f"the action succeeded but its check failed ({cstopped or describe_exit(crc)})"
            sup.note(reason)
            keep_exit(journal, spec.run_id, spec.step_id, recorder, exit_code=0, outcome="failed", reason=reason,
                            step_status="failed")
            return 1
        sup.note("check passed")
    sup.note("the action completed")
    keep_exit(journal, spec.run_id, spec.step_id, recorder, exit_code=0, outcome="completed", step_status="completed")
    return 0


def _service_ended(journal: Journal, sup: Supervisor, spec: ActionSpec, rc: int, ready_seen: bool,
                   recorder: Recorder) -> int:
    try:
        stop_requested = any(e.kind == EventKind.RUN_STOP and e.run_id == spec.run_id
                             for e in journal.events(spec.run_id - 1, spec.step_id))
    except WRITE_ERRORS as exc:  # an I/O error reading: the exit is recorded as a death, said why
        sup.note(f"could not read whether a rollback asked the service to stop: {exc}")
        stop_requested = False
    if stop_requested:
        sup.note(f"the service stopped ({describe_exit(rc)}) as the rollback asked")
        keep_exit(journal, spec.run_id, spec.step_id, recorder, exit_code=rc, outcome="stopped",
                        reason="stopped by rollback")
        return 0
    if not ready_seen:
        reason = f"the service ended ({describe_exit(rc)}) before it was ready"
        sup.note(reason)
        keep_exit(journal, spec.run_id, spec.step_id, recorder, exit_code=rc, outcome="failed", reason=reason,
                        step_status="failed")
        return 1
    reason = f"the service died after it was ready ({describe_exit(rc)})"
    sup.note(reason)
    recorder.service_died(exit_code=rc, reason=reason)
    keep_exit(journal, spec.run_id, spec.step_id, recorder, exit_code=rc, outcome="failed", reason=reason,
                    step_status="failed")
    return 1


def shown_url(url: str) -> str:
    from eagle_console.httpnet import shown_url

    return shown_url(url)


def http_ok(url: str) -> bool:
    from eagle_console.httpnet import probe

    status = probe(url, deadline_s=1.0)
    return status is not None and 200 <= status < 300


def run_rollback(spec: RollbackSpec) -> int:
    journal = Journal(Path(spec.journal))
    log = Path(spec.log)
    sup = Supervisor(journal, log)
    me = os.getpid()
    # every write below waits out a full disk (recorder.persist) rather than kill the rollback half-way
    persist(partial(journal.append, EventKind.ROLLBACK_PROC, spec.target, spec.rollback_id, None, supervisor_pid=me,
                    supervisor_ctime=start_of(me), host=this_host()), "recording the rollback's supervisor")
    sup.note(f"rollback {spec.rollback_id} of {spec.target}: " + ", ".join(i.step_id for i in spec.items))
    for item in spec.items:
        current = journal.states().get(item.step_id)
        if current and current.status == "rolled_back":
            sup.note(f"{item.step_id}: already rolled back (resumed rollback)")
            continue
        run_id = persist(partial(journal.begin_run, item.step_id, command=item.description, log=str(log),
                                 kind="rollback", force=True), "recording the undo")
        recorder = Recorder(journal, run_id, item.step_id, None)
        recorder.proc(supervisor_pid=me, supervisor_ctime=start_of(me), host=this_host())
        sup.note(f"{item.step_id}: {item.description}")
        ok, reason = True, None
        if item.stop:
            persist(partial(journal.append, EventKind.RUN_STOP, item.step_id, item.stop["run_id"], None,
                            by_rollback=spec.rollback_id), "recording the stop")
            if (not_stopped := _stop_run(journal, sup, item.step_id, item.stop, spec.grace_s)) is not None:
                ok, reason = False, not_stopped
        if item.argv and item.node and ok:  # a node step's undo runs on its node, as a Ray job (cluster/node_undo.py)
            ok, reason = _undo_on_node(sup, spec, item, run_id, recorder)
        elif item.argv and ok:
            scanner = LogScanner(log, _log_size(log))
            try:
                child = sup.start(item.argv, spec.cwd, item.env or spec.env)
            except OSError as exc:
                ok, reason = False, f"could not start: {exc}"
            else:
                recorder.proc(pid=child.pid, pid_ctime=start_of(child.pid), pgid=child.pid, sid=child.pid)

                said: list[str] = []  # the undo's last `::reason`

                def on_line(line: str, recorder: Recorder = recorder, said: list[str] = said) -> None:
                    res = parse_result(line)
                    if res:
                        recorder.result(res[0], res[1])
                    if (why := parse_reason(line)) is not None:
                        said[:] = [why]

                rc, stopped = sup.supervise(child, scanner, on_line, lambda: None, spec.grace_s, recorder.retry)
                if rc != 0 or stopped:
                    ok, reason = False, stopped or failure_reason(rc, said[0] if said else None)
        while not recorder.flush():  # the undo's results and pids before its end
            time.sleep(exitslot.RETRY_S)
        if (missing := recorder.not_recorded()) is not None:
            reason = f"{reason}; {missing}" if reason else missing
        if not ok:
            sup.note(f"{item.step_id}: undo failed ({reason}); the rollback stops here and can be resumed")
            persist(partial(journal.end_run, run_id, item.step_id, exit_code=None, outcome="failed", reason=reason),
                    "recording the undo's end")
            persist(partial(journal.end_rollback, spec.rollback_id, spec.target, outcome="failed",
                            failed_step=item.step_id, reason=reason), "recording the rollback's end")
            return 1
        persist(partial(journal.end_run, run_id, item.step_id, exit_code=0, outcome="completed", reason=reason),
                "recording the undo's end")
        persist(partial(journal.set_status, item.step_id, "rolled_back", run_id, source="rollback"),
                "recording the step rolled back")
    sup.note(f"rollback {spec.rollback_id} of {spec.target} completed")
    persist(partial(journal.end_rollback, spec.rollback_id, spec.target, outcome="completed"),
            "recording the rollback's end")
    return 0


def _undo_on_node(sup: Supervisor, spec: RollbackSpec, item: UndoItem, run_id: int,
                  recorder: Recorder) -> tuple[bool, str | None]:
    """`item`'s undo as a Ray job on its node, followed to its end; (ok, reason)."""
    from eagle_console.cluster.node_undo import NodeUndo
    from eagle_console.engine.spec import spec_data

    assert item.argv and item.node
    remote = ActionSpec(run_id=run_id, step_id=item.step_id, journal="", log="-", argv=item.argv, cwd=spec.cwd,
                        env=item.env or spec.env, grace_s=spec.grace_s)
    undo = NodeUndo(item.cluster or "auto", item.node, sup.log_path, sup.note)
    return undo.run(spec_data(remote), recorder, lambda: sup.terminate_reason, spec.grace_s)


def _stop_run(journal: Journal, sup: Supervisor, step_id: str, stop: dict, grace_s: float) -> str | None:
    """Stop a run before its undo: its whole session (only the processes that are the run's own: the
    recorded leader's start time tells a reused sid apart), then wait for its supervisor, if alive, to
    record the end, so nothing of the run goes on while the undo runs. Returns why it could not be stopped
    (the undo then fails: never "rolled back" over a run that may still go on), or None."""
    if stop.get("job_id"):  # a run on a cluster node: Ray stops its job there, or the node's agent does
        from eagle_console.cluster.jobs import stop_job_run

        stopped, what = stop_job_run(journal, stop, grace_s)
        sup.note(f"{step_id}: {what}")
        return None if stopped else what
    sid = stop.get("sid")
    if sid:
        pids = stop_session(int(sid), stop.get("pgid"), grace_s, leader_start=stop.get("pid_ctime"))
        left = session_members(int(sid), stop.get("pgid"), stop.get("pid_ctime"))
        if left:  # not ours to signal (root's run of an operator's plan), or past SIGKILL: never "stopped"
            why = f"could not stop the run's session {sid}: {_still_running(left)}"
            sup.note(f"{step_id}: {why}")
            return why
        sup.note(f"{step_id}: stopped the run's session {sid}: pids {pids}")
    deadline = time.monotonic() + grace_s + 10.0
    while time.monotonic() < deadline:
        run = journal.run(int(stop["run_id"]))
        if run is None or run.finished or not alive(run.supervisor_pid, run.supervisor_ctime):
            return None
        time.sleep(POLL_S)
    sup.note(f"{step_id}: the run's supervisor did not record its end within {grace_s + 10.0:g}s")
    return None


def _still_running(procs: list) -> str:
    """`pids 6053, 6054 still run: root's, not bob's to signal (roll it back as root)`."""
    import psutil

    from eagle_console.node.kill import current_user

    owners = set()
    for p in procs:
        try:
            owners.add(p.username())
        except (psutil.Error, KeyError):
            owners.add("?")
    text = f"pids {', '.join(str(p.pid) for p in procs[:8])}{' …' if len(procs) > 8 else ''} still run"
    me = current_user() or "this user"  # not $USER (kept by setpriv, sudo -E)
    others = sorted(owners - {me})
    if others:
        who = others[0] if len(others) == 1 else "their owners"
        return f"{text}: {', '.join(others)}'s, not {me}'s to signal (roll it back as {who})"
    return f"{text} after SIGKILL (in the kernel: a driver call, a D state)"


USAGE = "usage: python -m eagle_console.engine.supervise SPEC.json [--detach] | --job-spec PATH"


def record_crash(spec: ActionSpec | RollbackSpec, exc: Exception) -> int:
    """A supervisor's own error, recorded as the run's (or rollback's) end — kept and retried like any exit
    on a full disk: this last write must not be what kills it either."""
    import traceback

    try:
        traceback.print_exc()
    except OSError:
        pass
    reason = f"supervisor error: {type(exc).__name__}: {exc}"
    journal = persist(partial(open_journal, spec), "opening the journal")
    if isinstance(spec, ActionSpec):
        keep_exit(journal, spec.run_id, spec.step_id, exit_code=None, outcome="failed", reason=reason,
                  step_status="failed")
    else:
        persist(partial(journal.end_rollback, spec.rollback_id, spec.target, outcome="failed", reason=reason),
                "recording the rollback's end")
    return 1


def outlive_the_job_actor() -> None:
    """A Ray job's entrypoint forks: this process stays Ray's child (its exit is the job's; the SIGTERM of a
    `stop_job` is passed on) and returns only in the child, the supervisor, in a session of its own.

    Ray SIGKILLs the entrypoint's process group within a second of the job's supervisor actor dying
    (ray 2.60.0 `dashboard/modules/job/job_supervisor.py` `_exec_entrypoint`: a watcher `while kill -s 0
    PARENT; do sleep 1; done; kill -9 -PGID`), and that actor dies with its raylet, its node's Ray or a
    restarted head. Measured on two hosts: the supervisor was killed, its action ran on unrecorded. Out of
    that group the supervisor lives on, records its action's end on the node (cluster/noderuns.py) and
    keeps its own grace on a stop (Ray SIGKILLs the group RAY_JOB_STOP_WAIT_TIME_S, 3 s, after its SIGTERM)."""
    child = os.fork()
    if child == 0:
        os.setsid()
        return

    def pass_on(signum: int, _frame: object) -> None:
        try:
            os.kill(child, signum)
        except ProcessLookupError:
            pass

    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(sig, pass_on)
    _, status = os.waitpid(child, 0)  # retried across the handlers' interruptions (PEP 475)
    code = os.waitstatus_to_exitcode(status)
    os._exit(code if code >= 0 else 128 - code)


def main(argv: list[str]) -> int:
    if not argv or (argv[0] == "--job-spec" and len(argv) < 2):
        print(USAGE, file=sys.stderr)
        return 2
    if argv[0] == "--job-spec":
        outlive_the_job_actor()
    if "--detach" in argv and os.fork() > 0:
        os._exit(0)  # the caller reaps this parent at once; the child below is adopted by init
    if "--detach" in argv:
        os.setsid()
    selfmark.mark(selfmark.ENGINE)  # a kill spares its supervisor whatever matches (node/selfmark.py)
    forget_own_entry()  # what we start gets the operator's PYTHONPATH (child_env adds ours where needed)
    if argv[0] == "--job-spec":  # a Ray job's entrypoint: a private file on this node, taken (read, removed)
        from eagle_console.cluster.handoff import take_spec
        from eagle_console.engine.spec import spec_from_data

        spec = spec_from_data(take_spec(argv[1]))
    else:
        spec = read_spec(Path(argv[0]))
    try:
        if isinstance(spec, ActionSpec):
            return run_action(spec)
        return run_rollback(spec)
    except Exception as exc:  # record why instead of leaving the run to be found `lost`
        return record_crash(spec, exc)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
