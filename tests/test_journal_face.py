"""Every journal record says which face acted (console, cli, agent:<client>): journals written before the
`face` column are brought forward when opened for writing, and read as they are by a read-only reader."""

from __future__ import annotations

import json
import sqlite3
import subprocess
from pathlib import Path

import clikit

from eagle_console.journal import Journal
from eagle_console.journal.faults import SCHEMA_VERSION
from eagle_console.journal.operator import agent_face

# The events table as eagle-console wrote it before issue 34 (schema version 1), word for word.
OLD_SCHEMA = """
CREATE TABLE IF NOT EXISTS events (
    id      INTEGER PRIMARY KEY AUTOINCREMENT,
    at      REAL    NOT NULL,
    kind    TEXT    NOT NULL,
    step_id TEXT,
    run_id  INTEGER,
    who     TEXT,
    data    TEXT    NOT NULL DEFAULT '{}'
);
CREATE INDEX IF NOT EXISTS events_step ON events (step_id, kind, id);
CREATE INDEX IF NOT EXISTS events_run ON events (run_id, id);
CREATE INDEX IF NOT EXISTS events_kind ON events (kind, id);
CREATE TRIGGER IF NOT EXISTS events_no_update BEFORE UPDATE ON events
    BEGIN SELECT RAISE(ABORT, 'the journal is append-only'); END;
CREATE TRIGGER IF NOT EXISTS events_no_delete BEFORE DELETE ON events
    BEGIN SELECT RAISE(ABORT, 'the journal is append-only'); END;
"""


def old_journal(path: Path, version: int = 1) -> Path:
    conn = sqlite3.connect(path)
    conn.executescript(OLD_SCHEMA)
    conn.execute("INSERT INTO events (at, kind, step_id, run_id, who, data) VALUES (1.0, 'status', '0.1', NULL, "
                 "'alice', ?)", (json.dumps({"status": "completed", "source": "mark"}),))
    conn.execute("INSERT INTO events (at, kind, step_id, run_id, who, data) VALUES (2.0, 'note', '0.1', NULL, "
                 "'alice', ?)", (json.dumps({"text": "done by hand"}),))
    conn.execute(f"PRAGMA user_version = {version}")
    conn.commit()
    conn.close()
    return path


def columns(path: Path) -> list[str]:
    with sqlite3.connect(path) as conn:
        return [row[1] for row in conn.execute("PRAGMA table_info(events)")]


def version(path: Path) -> int:
    with sqlite3.connect(path) as conn:
        return conn.execute("PRAGMA user_version").fetchone()[0]


def test_an_old_journal_is_migrated_forward_when_opened_for_writing(tmp_path) -> None:
    for old in (1, 0):  # schema 1, and a journal from before versions were stamped
        db = old_journal(tmp_path / f"v{old}.db", old)
        journal = Journal(db, face="cli")
        try:
            assert version(db) == SCHEMA_VERSION == 2 and "face" in columns(db)
            state = journal.states()["0.1"]
            assert (state.status, state.who, state.face) == ("completed", "alice", None)  # history kept as it was
            journal.mark("0.2", "skipped", note="not needed", who="bob")
            assert journal.states()["0.2"].face == "cli" and journal.notes("0.2")[0].face == "cli"
            assert [n.face for n in journal.notes("0.1")] == [None]
        finally:
            journal.close()
        again = Journal(db)  # opening a migrated journal again migrates nothing
        again.close()
        assert version(db) == 2


def test_a_read_only_reader_reads_an_old_journal_without_changing_it(tmp_path) -> None:
    db = old_journal(tmp_path / "journal.db")
    journal = Journal(db, readonly=True)
    try:
        assert journal.states()["0.1"].face is None and journal.notes()[0].text == "done by hand"
        assert [e.face for e in journal.events()] == [None, None]
    finally:
        journal.close()
    assert version(db) == 1 and "face" not in columns(db)


def test_only_events_naming_someone_carry_a_face(tmp_path) -> None:
    journal = Journal(tmp_path / "journal.db", face=agent_face("claude code\n\x1b[31m"))
    try:
        run_id = journal.begin_run("0.3", command="serve", log=None, who="carol")
        journal.end_run(run_id, "0.3", exit_code=0, outcome="completed", step_status="completed")
        faces = {e.kind: e.face for e in journal.events()}
        # the client's name is the peer's text: cut to printable characters without spaces
        assert faces["run_begin"] == "agent:claude_code__[31m"
        assert faces["run_exit"] is None  # the engine's own record names nobody
        assert journal.run(run_id).face == "agent:claude_code__[31m"
    finally:
        journal.close()


PLAN = """[plan]
id = "faces"
title = "faces"
[[phase]]
id = "0"
title = "P"
  [[phase.step]]
  id = "0.1"
  title = "by hand"
"""


def cli(*args: object) -> subprocess.CompletedProcess:
    return clikit.run(args, timeout=60)


def test_status_and_exports_say_the_cli_acted(tmp_path) -> None:
    plan = tmp_path / "faces.toml"
    plan.write_text(PLAN)
    assert cli("mark", plan, "0.1", "completed", "--note", "checked by hand").returncode == 0
    doc = json.loads(cli("status", plan, "--json").stdout)
    step = doc["phases"][0]["steps"][0]
    assert step["changed"]["face"] == "cli" and step["changed"]["who"]
    exported = json.loads(cli("export", plan, "--format", "json").stdout)
    assert exported["notes"][0]["face"] == "cli"
    markdown = cli("export", plan, "--format", "markdown").stdout
    assert f"({step['changed']['who']} via cli): checked by hand" in markdown
