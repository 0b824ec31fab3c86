"""The journal: concurrent writers lose nothing, history cannot be rewritten, phases are derived."""

from __future__ import annotations

import sqlite3
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from eagle_console.journal import Journal, phase_status, plan_statuses, unmet_needs
from eagle_console.plan.loader import load_plan

WRITER = textwrap.dedent("""
    import sys
    from eagle_console.journal import Journal
    j = Journal(sys.argv[1])
    who = sys.argv[2]
    sys.stdout.write("ready\\n"); sys.stdout.flush()
    sys.stdin.readline()  # start together
    for i in range(200):
        j.mark("0.1", "completed" if i % 2 else "in_progress", who=who)
        if i % 10 == 0:
            j.note("0.1", f"{who} {i}", who=who)
""")


def test_two_processes_marking_at_once_lose_nothing(tmp_path: Path) -> None:
    db = tmp_path / "journal.db"
    procs = [subprocess.Popen([sys.executable, "-c", WRITER, str(db), who], stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, text=True) for who in ("alice", "bob")]
    for p in procs:
        assert p.stdout.readline() == "ready\n"
    for p in procs:
        p.stdin.write("go\n")
        p.stdin.flush()
    for p in procs:
        assert p.wait(timeout=120) == 0
    j = Journal(db)
    marks = [e for e in j.events() if e.kind == "status"]
    assert len(marks) == 400
    assert sorted(e.who for e in marks).count("alice") == 200
    assert len(j.notes("0.1")) == 40
    ids = [e.id for e in j.events()]
    assert ids == sorted(set(ids))
    assert j.states()["0.1"].event_id == marks[-1].id


def test_history_cannot_be_rewritten(tmp_path: Path) -> None:
    j = Journal(tmp_path / "journal.db")
    j.mark("0.1", "completed", note="done by hand")
    conn = sqlite3.connect(tmp_path / "journal.db")
    with pytest.raises(sqlite3.DatabaseError, match="append-only"):
        conn.execute("UPDATE events SET data = '{}'")
    with pytest.raises(sqlite3.DatabaseError, match="append-only"):
        conn.execute("DELETE FROM events")
    assert j.statuses() == {"0.1": "completed"} and j.notes()[0].text == "done by hand"


def test_last_status_wins_and_bad_status_refused(tmp_path: Path) -> None:
    j = Journal(tmp_path / "journal.db")
    j.mark("0.1", "completed")
    j.mark("0.1", "rolled_back")
    assert j.statuses()["0.1"] == "rolled_back"
    with pytest.raises(ValueError, match="unknown status"):
        j.mark("0.1", "done")
    assert len([e for e in j.events() if e.kind == "status"]) == 2


@pytest.mark.parametrize(("steps", "want"), [
    ([], "pending"),
    (["pending", "pending"], "pending"),
    (["completed", "skipped"], "completed"),
    (["completed", "pending"], "in_progress"),
    (["failed", "pending"], "in_progress"),
    (["in_progress"], "in_progress"),
    (["skipped", "pending"], "pending"),
    (["rolled_back", "rolled_back"], "pending"),
])
def test_phase_status_is_derived(steps: list[str], want: str) -> None:
    assert phase_status(steps) == want


def test_plan_statuses_and_needs(tmp_path: Path) -> None:
    plan = load_plan(Path(__file__).resolve().parent.parent / "plans" / "phase0-aqmedai-probe.toml",
                     state_dir=tmp_path)
    j = Journal.for_plan(plan)
    assert j.path == tmp_path / "journal.db"
    j.mark("0.1", "completed")
    derived = plan_statuses(plan, j.statuses())
    assert derived["0"] == "in_progress" and derived["0.3"] == "pending"
    assert unmet_needs(plan, plan.step("0.3"), j.statuses()) == ["0.2"]
    j.mark("0.2", "skipped")
    assert unmet_needs(plan, plan.step("0.3"), j.statuses()) == []


def test_a_held_record_is_written_once_whoever_writes_it(tmp_path: Path) -> None:
    """The supervisor retrying and a reader replaying its held slot (journal/heldslot.py) may both write the
    same record: the journal keeps one, by its number, each kind apart."""
    from eagle_console.journal.recorder import apply_record

    a, b = Journal(tmp_path / "journal.db"), Journal(tmp_path / "journal.db")  # two processes' connections
    run_id = a.begin_run("0.1", command="x", log=None, service=True)
    held = [{"kind": "result", "name": "tok_s", "value": 1.5, "seq": 1},
            {"kind": "ready", "seq": 2},
            {"kind": "proc", "proc": {"pid": 42, "sid": 42}, "seq": 3},
            {"kind": "result", "name": "tok_s", "value": 1.5, "seq": 4}]  # printed twice: both kept
    for journal in (a, b, a):
        for record in held:
            apply_record(journal, run_id, "0.1", record, held=True)
    assert [r.value for r in b.results("0.1")] == [1.5, 1.5]
    assert b.run(run_id).ready_at is not None and b.run(run_id).pid == 42
    assert len([e for e in b.history("0.1") if e.kind == "run_ready"]) == 1
    assert b.statuses()["0.1"] == "completed"  # readiness completes the service's step, once
    a.close()
    b.close()
