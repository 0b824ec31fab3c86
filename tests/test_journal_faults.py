"""Journal faults are said with the file and what to do, never `internal error: DatabaseError` (issue #18):
garbage, a corrupt page, a newer schema, a read-only mount (read through, immutable), a full disk; and the
schema version (`PRAGMA user_version`) is stamped and migrated."""

from __future__ import annotations

import os
import sqlite3
import subprocess
from pathlib import Path

import clikit
import pytest
from enginekit import write_plan

from eagle_console.journal import Journal
from eagle_console.journal.faults import SCHEMA_VERSION, JournalError

PLAN = """
    [[phase]]
    id = "0"
    title = "P"

    [[phase.step]]
    id = "0.1"
    title = "one"
    run = "true"
"""


def cli(*args: str, state: Path) -> subprocess.CompletedProcess:
    return clikit.run(args, timeout=60, env={**os.environ, "EAGLE_CONSOLE_STATE": str(state)})


def journal_with_history(state: Path, notes: int = 1) -> Path:
    state.mkdir(parents=True, exist_ok=True)
    journal = Journal(state / "journal.db")
    journal.mark("0.1", "completed")
    for i in range(notes):
        journal.note("0.1", f"note {i} " + "x" * 200)
    journal.close()  # the last close checkpoints the WAL into the file
    return state / "journal.db"


def test_a_garbage_journal_is_named_with_what_to_do(tmp_path):
    plan = write_plan(tmp_path, PLAN)
    state = tmp_path / "state"
    state.mkdir()
    (state / "journal.db").write_bytes(b"this is not sqlite\n" * 400)
    for args in (("status", str(plan)), ("mark", str(plan), "0.1", "completed")):
        out = cli(*args, state=state)
        assert out.returncode == 1, out.stderr
        assert "internal error" not in out.stderr
        assert f"the journal {state / 'journal.db'} is not an eagle-console journal" in out.stderr
        assert "move it aside" in out.stderr


def test_a_corrupt_page_is_named_with_the_recovery_command(tmp_path):
    plan = write_plan(tmp_path, PLAN)
    db = journal_with_history(tmp_path / "state", notes=400)
    page = sqlite3.connect(db).execute("PRAGMA page_size").fetchone()[0]
    with open(db, "r+b") as f:  # keep the header page, scribble over the pages of the table
        f.seek(page * 2)
        f.write(os.urandom(page * 8))
    out = cli("status", str(plan), state=tmp_path / "state")
    assert out.returncode == 1, out.stdout + out.stderr
    assert "internal error" not in out.stderr
    assert str(db) in out.stderr and ("corrupt" in out.stderr or "not an eagle-console journal" in out.stderr)


def test_the_schema_version_is_stamped_migrated_and_a_newer_one_refused(tmp_path):
    db = journal_with_history(tmp_path / "state")
    assert sqlite3.connect(db).execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
    old = tmp_path / "old.db"  # a journal written before versions: the same tables, version 0
    conn = sqlite3.connect(old)
    conn.execute("CREATE TABLE events (id INTEGER PRIMARY KEY AUTOINCREMENT, at REAL NOT NULL, kind TEXT NOT NULL,"
                 " step_id TEXT, run_id INTEGER, who TEXT, data TEXT NOT NULL DEFAULT '{}')")
    conn.execute("INSERT INTO events (at, kind, step_id, data) VALUES (1.0, 'status', '0.1', "
                 "'{\"status\": \"completed\"}')")
    conn.commit()
    conn.close()
    journal = Journal(old)
    assert journal.statuses() == {"0.1": "completed"}
    journal.close()
    assert sqlite3.connect(old).execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION

    conn = sqlite3.connect(db)
    conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION + 1}")
    conn.close()
    for readonly in (False, True):
        with pytest.raises(JournalError, match=f"schema version {SCHEMA_VERSION + 1}, newer"):
            Journal(db, readonly=readonly)


def _mount(*args: str) -> bool:
    return subprocess.run(["mount", *args], capture_output=True).returncode == 0


@pytest.fixture
def mountpoint(tmp_path, request):
    if os.geteuid() != 0:
        pytest.skip("mounting a tmpfs needs root")
    where = tmp_path / "mnt"
    where.mkdir()
    if not _mount("-t", "tmpfs", "-o", "size=4m", "tmpfs", str(where)):
        pytest.skip("mount is not allowed here (a container without CAP_SYS_ADMIN)")
    request.addfinalizer(lambda: subprocess.run(["umount", "-l", str(where)], capture_output=True))
    return where


def test_status_reads_a_journal_on_a_read_only_mount(tmp_path, mountpoint):
    plan = write_plan(tmp_path, PLAN)
    state = mountpoint / "state"
    journal_with_history(state)
    assert _mount("-o", "remount,ro", str(mountpoint))
    out = cli("status", str(plan), "--json", state=state)
    assert out.returncode == 0, out.stderr
    assert '"completed"' in out.stdout
    journal = Journal(state / "journal.db", readonly=True)
    assert journal.statuses() == {"0.1": "completed"}
    journal.close()
    out = cli("mark", str(plan), "0.1", "pending", state=state)
    assert out.returncode != 0 and "internal error" not in out.stderr and str(state) in out.stderr


def test_a_full_disk_is_said_with_the_path(tmp_path, mountpoint):
    plan = write_plan(tmp_path, PLAN)
    state = mountpoint / "state"
    journal_with_history(state)
    with open(mountpoint / "filler", "wb") as f:  # fill the 4 MiB tmpfs
        try:
            while True:
                f.write(b"\0" * 65536)
                f.flush()
        except OSError:
            pass
    out = cli("note", str(plan), "0.1", "y" * 100_000, state=state)
    assert out.returncode == 1, out.stdout + out.stderr
    assert "internal error" not in out.stderr
    assert f"the journal {state / 'journal.db'}" in out.stderr and "disk is full" in out.stderr
