"""Journal event kinds are one named list, and the text stored for each is the text older journals hold."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

from eagle_console.journal import EventKind, Journal
from eagle_console.journal.store import SCHEMA

# The `events.kind` text journals have been written with: renaming a member's value would orphan them.
STORED = {"status", "note", "result", "run_begin", "run_proc", "run_log", "run_ready", "run_exit", "run_stop",
          "service_died", "rollback_begin", "rollback_proc", "rollback_end", "kill",
          "approval_asked", "approval_decided", "approval_done"}


def stored_kinds(db: Path) -> list[str]:
    with sqlite3.connect(db) as conn:
        return [r[0] for r in conn.execute("SELECT kind FROM events ORDER BY id")]


def test_every_kind_keeps_its_stored_text() -> None:
    assert {k.value for k in EventKind} == STORED


def test_the_journal_writes_only_named_kinds_as_plain_text(tmp_path: Path) -> None:
    j = Journal(tmp_path / "journal.db")
    j.mark("0.1", "completed", note="done by hand", who="alice")
    run_id = j.begin_run("0.2", command="serve", log="/tmp/x.log", service=True, who="bob")
    j.record_proc(run_id, "0.2", pid=123, sid=123)
    j.append(EventKind.RUN_LOG, "0.2", run_id, None, log="/tmp/y.log")
    j.record_ready(run_id, "0.2")
    j.record_result("0.2", run_id, "throughput", 812.5)
    j.end_run(run_id, "0.2", exit_code=0, outcome="completed")
    kinds = stored_kinds(tmp_path / "journal.db")
    assert set(kinds) <= {k.value for k in EventKind}
    assert [e.kind for e in j.events()] == kinds
    run = j.run(run_id)
    assert run is not None and (run.pid, run.log, run.outcome) == (123, "/tmp/y.log", "completed")
    assert run.ready_at is not None


def test_a_journal_written_with_plain_strings_still_reads(tmp_path: Path) -> None:
    """What an older eagle-console wrote (kinds as literals, a run_stop among the run events)."""
    db = tmp_path / "journal.db"
    rows = [
        ("status", "0.1", None, "alice", {"status": "skipped", "source": "mark"}),
        ("note", "0.1", None, "alice", {"text": "not needed here"}),
        ("run_begin", "0.2", None, "bob", {"kind": "action", "command": "echo", "log": "a.log", "service": False,
                                           "env": {}}),
        ("status", "0.2", 3, "bob", {"status": "in_progress", "source": "run"}),
        ("run_proc", "0.2", 3, None, {"pid": 77, "sid": 77}),
        ("run_stop", "0.2", 3, None, {"by_rollback": 9}),
        ("result", "0.2", 3, None, {"name": "tok_s", "value": 10.0}),
        ("run_exit", "0.2", 3, None, {"exit_code": 0, "outcome": "completed", "reason": None}),
        ("status", "0.2", 3, None, {"status": "completed", "source": "run"}),
    ]
    with sqlite3.connect(db) as conn:
        conn.executescript(SCHEMA)
        conn.executemany("INSERT INTO events (at, kind, step_id, run_id, who, data) VALUES (1.0, ?, ?, ?, ?, ?)",
                         [(k, s, r, w, json.dumps(d)) for k, s, r, w, d in rows])
    j = Journal(db)
    assert j.statuses() == {"0.1": "skipped", "0.2": "completed"}
    assert [n.text for n in j.notes("0.1")] == ["not needed here"]
    assert [(r.name, r.value) for r in j.results()] == [("tok_s", 10.0)]
    (run,) = j.runs()
    assert (run.id, run.pid, run.exit_code, run.outcome, run.finished) == (3, 77, 0, "completed", True)
    assert j.end_run(3, "0.2", exit_code=1, outcome="failed") is False  # its run_exit is found by kind
