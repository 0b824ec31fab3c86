"""What a run's processes are now, for every face: its supervisor running, stopped (SIGSTOP: it goes on
when continued) or dead; its action running, stopped, exited (a zombie its stopped supervisor has not
reaped) or gone; and, once the run has ended, the processes of its session that still run — the action a
supervisor killed with -9 left going, which a second `run` must not duplicate.

States come from /proc/PID/stat (processes.proc_state), identities from the recorded start times: a
reused pid or session number is never taken for the run's.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from typing import TYPE_CHECKING, NamedTuple

from eagle_console.processes import (
    DEAD,
    STOPPED,
    ProcStart,
    alive,
    born_within,
    on_this_host,
    proc_state,
    same_process,
    session_window,
)

if TYPE_CHECKING:
    from eagle_console.journal import Journal, Run


class RunProcs(NamedTuple):
    supervisor_state: str | None  # running | stopped | dead; None once the run ended (or before it reported)
    action_state: str | None  # running | stopped | exited | gone; None without a recorded action pid
    still_running: list[int]  # an ended run's session members still alive (its action outlived it)


def process_word(pid: int | None, ctime: ProcStart | None, dead: str) -> str | None:
    """running | stopped | `dead` (gone, reused, or a zombie) for the recorded process."""
    if not pid:
        return None
    state = proc_state(pid)
    if state is None or not same_process(pid, ctime):
        return dead
    if state in DEAD:
        return "exited" if dead == "gone" else dead  # an action's zombie: it ended, nobody recorded it yet
    return "stopped" if state in STOPPED else "running"


def run_procs(run: Run, still: list[int] | None = None) -> RunProcs:
    """The run's processes now; `still` (from `still_running_many`) saves a scan of every process."""
    if run.job_id or not on_this_host(run.host):  # a cluster node's (its Ray job says) or another machine's
        return RunProcs(None, None, [])
    if run.finished:
        return RunProcs(None, None, still_running(run) if still is None else still)
    return RunProcs(process_word(run.supervisor_pid, run.supervisor_ctime, "dead"),
                    process_word(run.pid, run.pid_ctime, "gone"), [])


def still_running(run: Run) -> list[int]:
    return still_running_many([run]).get(run.id, [])


def still_running_many(runs: Iterable[Run]) -> dict[int, list[int]]:
    """For each `lost` run (its supervisor died) with a recorded session and leader start time: the live
    processes of that session (or process group) born after its leader — in one pass over the processes. A
    session number now led by another process counts only what was born before that leader
    (processes.session_members' rule). Other ended runs had their session swept by their supervisor (a
    service's leftovers are orphans: `orphans`, K), and only a lost run's is what a rollback stops."""
    wanted = {r.id: r for r in runs
              if r.finished and r.outcome == "lost" and r.sid and r.pid_ctime and not r.job_id
              and on_this_host(r.host)}
    if not wanted:
        return {}
    me = os.getpid()
    by_sid: dict[int, set[int]] = {}
    for pid in _pids():
        if pid == me:
            continue
        try:
            sid, pgid = os.getsid(pid), os.getpgid(pid)
        except OSError:
            continue
        by_sid.setdefault(sid, set()).add(pid)
        by_sid.setdefault(pgid, set()).add(pid)
    out: dict[int, list[int]] = {}
    for run_id, run in wanted.items():
        window = session_window(int(run.sid), run.pid_ctime)
        members = by_sid.get(int(run.sid), set()) | by_sid.get(int(run.pgid or 0), set())
        out[run_id] = sorted(pid for pid in members if window is not None and born_within(pid, window))
    return out


def _pids() -> list[int]:
    try:
        return [int(name) for name in os.listdir("/proc") if name.isdigit()]
    except OSError:
        return []


def live_service(journal: Journal, step_id: str) -> Run | None:
    """The step's service run while its supervisor is alive (the service is up or starting), else None."""
    run = journal.latest_run(step_id)
    if run and run.service and not run.finished and alive(run.supervisor_pid, run.supervisor_ctime):
        return run
    return None
