"""A node step's undo (its `rollback` command, a built-in's undo) runs where the step ran: a Ray job on its node.

The step's own run was a job on node `b` (cluster/jobs.py): what it made is on b (a file in b's /tmp, the
extraction's `${data}/hidden_states` on b's disk). Its undo ran on the console's machine and said "rolled
back" while b kept the file. Now the rollback's supervisor (engine/supervise.py `run_rollback`, on the
console's machine, where the journal is) submits the undo as a job on the node the same way a run is
submitted — our supervisor as the entrypoint, the spec in a private file on the node (cluster/handoff.py) —
and follows it: the job's log is appended to the rollback log here, its `proc` and `result` events are
journaled for the undo's run, and its `exit` event is the undo's outcome. A node the cluster does not have
alive, a job that cannot be submitted, a node that goes away while the undo runs, a job that ends without an
exit: each fails the undo with the reason (the rollback stops there and can be resumed), never "rolled back".
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from eagle_console.cluster.job_events import split_log, whole_lines

if TYPE_CHECKING:
    from eagle_console.journal.recorder import Recorder

POLL_S = 0.5  # the job's status and log: HTTP calls to the head
# An ended job whose log cannot be read yet is asked again this long before the undo is failed: the log is
# served by the node's dashboard agent, which a node just (re)started registers seconds after it is alive
# (Ray 2.60's job head then answered 500 "Port out of range 0-65535"), and without the log there is no exit.
LOG_WAIT_S = 30.0
NODE_CHECK_S = 2.0  # the GCS's node table, asked at most this often while the undo runs


class NodeUndo:
    """One undo on one node: submit, follow, end. `note` writes a line into the rollback log."""

    def __init__(self, address: str, node: str, log: Path, note: Callable[[str], None]) -> None:
        self.address, self.node, self.log, self.note = address, node, log, note
        self.copied = 0  # lines of the job's log already appended to the rollback log
        self.log_error: str | None = None  # why the job's log could not be read at the last poll

    def unreachable(self) -> str | None:
        """Why the undo cannot run on the node now (the cluster or the node not there), or None."""
        from eagle_console.cluster.connect import unknown_nodes

        try:
            if unknown_nodes(self.address, [self.node]):
                return (f"node {self.node} is unreachable: no live raylet of the cluster at {self.address} has "
                        f"the resource eagle-node:{self.node}")
        except Exception as exc:  # noqa: BLE001 - ClusterError, Ray's own: the node cannot be reached
            return f"node {self.node} is unreachable: {exc}"
        return None

    def run(self, spec: dict[str, Any], recorder: Recorder, stop_asked: Callable[[], str | None],
            grace_s: float) -> tuple[bool, str | None]:
        """Run the undo whose supervisor spec is `spec` (an ActionSpec's data, journal "" and log "-") on the
        node; (ok, reason). `stop_asked()` says why to stop it (the rollback's supervisor got SIGTERM)."""
        from eagle_console.cluster.jobs import job_client, submit_with_spec

        if (why := self.unreachable()) is not None:
            return False, f"{why}; nothing was undone there"
        try:
            client = job_client(self.address)
            job_id = submit_with_spec(client, self.node, spec, "-m eagle_console.engine.supervise --job-spec",
                                      metadata={"eagle_console_undo": str(spec["run_id"]),
                                                "step": str(spec["step_id"]), "node": self.node})
        except Exception as exc:  # noqa: BLE001 - the cluster's refusal, said with the node
            return False, f"could not submit the undo's Ray job to node {self.node}: {exc}"
        self.note(f"{spec['step_id']}: the undo runs on node {self.node} as Ray job {job_id}")
        return self._follow(client, job_id, spec["step_id"], recorder, stop_asked, grace_s)

    def _follow(self, client: Any, job_id: str, step_id: str, recorder: Recorder,
                stop_asked: Callable[[], str | None], grace_s: float) -> tuple[bool, str | None]:
        from eagle_console.cluster.jobs import STOP_EXTRA_S

        seen_proc = False
        stopping_since: float | None = None
        last_node_check = time.monotonic()
        events: list[dict[str, Any]] = []
        unread_since: float | None = None  # the job ended, its log not read since
        while True:
            try:
                info = client.get_job_info(job_id)
            except Exception as exc:  # noqa: BLE001 - the head gone: the undo's outcome cannot be known
                return False, f"lost sight of the undo's Ray job {job_id} on node {self.node}: {exc}"
            terminal = info.status.is_terminal()
            copied = self._copy(client, job_id, terminal)
            events = copied or events
            if terminal and copied is None:
                unread_since = unread_since or time.monotonic()
                if time.monotonic() - unread_since < LOG_WAIT_S:
                    time.sleep(POLL_S)
                    continue
                return False, (f"the undo's Ray job {job_id} on node {self.node} ended {info.status}, but its log "
                               f"(where its exit is) could not be read for {LOG_WAIT_S:g}s ({self.log_error}): "
                               "whether it was undone there is not known")
            for e in events:
                if e.get("kind") == "proc" and not seen_proc:
                    seen_proc = True  # the undo's pids are node b's: journaled with the node, never judged here
                    recorder.proc(node=self.node, **{k: v for k, v in e.items() if k != "kind"})
            if terminal:
                break
            why = stop_asked()
            if why and stopping_since is None:
                stopping_since = time.monotonic()
                self.note(f"{step_id}: stopping the undo's Ray job {job_id} ({why})")
                try:
                    client.stop_job(job_id)
                except Exception:  # noqa: BLE001 - ended meanwhile: the status says
                    pass
            if stopping_since is not None and time.monotonic() - stopping_since > grace_s + STOP_EXTRA_S:
                return False, f"{why}; the undo's Ray job {job_id} did not stop within {grace_s + STOP_EXTRA_S:g}s"
            if time.monotonic() - last_node_check > NODE_CHECK_S:
                last_node_check = time.monotonic()
                if (gone := self.unreachable()) is not None:
                    return False, f"{gone} while the undo ran: whether it was undone there is not known"
            time.sleep(POLL_S)
        for e in events:
            if e.get("kind") == "result":
                recorder.result(e["name"], e["value"])
        ends = [e for e in events if e.get("kind") == "exit"]
        if ends:
            end = ends[-1]
            return end.get("outcome") == "completed", end.get("reason")
        if stopping_since is not None:
            return False, stop_asked() or "stopped"
        return False, (f"the undo's Ray job {job_id} on node {self.node} ended {info.status} without an exit "
                       f"({info.message or 'no message'})")

    def _copy(self, client: Any, job_id: str, terminal: bool) -> list[dict[str, Any]] | None:
        """The job's new lines appended to the rollback log; the job's events so far (None: log unreadable)."""
        try:
            text = client.get_job_logs(job_id)
        except Exception as exc:  # noqa: BLE001 - the node's log server busy, not up yet or gone: read again
            from eagle_console.cluster.link import error_point

            self.log_error = error_point(exc)[:300]
            return None
        lines, events = split_log(text if terminal else whole_lines(text), ended=terminal)
        new = lines[self.copied:]
        if new:
            from eagle_console.node.tail import open_regular

            try:  # only a regular file, as the supervisor's own notes (a FIFO would block)
                with open(open_regular(self.log, append=True), "a", encoding="utf-8") as f:
                    f.writelines(line + "\n" for line in new)
            except OSError:
                return events  # not copied: tried again at the next poll
            self.copied = len(lines)
        return events
