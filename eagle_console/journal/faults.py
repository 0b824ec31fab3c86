"""What goes wrong with the journal file, said with its path and what to do — never `internal error:
DatabaseError`; and the schema version (`PRAGMA user_version`) with its migrations.

The journal needs a local filesystem: WAL mode shares a memory-mapped `-shm` index between processes, which
NFS/SMB do not provide (docs/decisions.md).
"""

from __future__ import annotations

import os
import shutil
import sqlite3
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from eagle_console.statedir import logs_dir

# 1: the events table, its indexes and the append-only triggers (journal/store.SCHEMA). A journal written
# before versions existed reads 0 and has the same tables: its migration only stamps the version.
# 2: events gain `face` (console | cli | agent:<client>: which face acted, beside `who`; issue 34).
SCHEMA_VERSION = 2


def _add_face(conn: sqlite3.Connection) -> None:
    """1 → 2: the `face` column. A journal created by this version already has it (store.SCHEMA creates the
    table with it before the version is stamped), so it is added only where it is missing."""
    if not has_column(conn, "events", "face"):
        conn.execute("ALTER TABLE events ADD COLUMN face TEXT")


# From version N to N+1: the SQL to run, or a function of the connection (none needed for 0 → 1).
MIGRATIONS: dict[int, str | Callable[[sqlite3.Connection], None]] = {0: "", 1: _add_face}


def has_column(conn: sqlite3.Connection, table: str, column: str) -> bool:
    return any(row[1] == column for row in conn.execute(f"PRAGMA table_info({table})"))


class JournalError(Exception):
    """The journal file cannot be used; the message names it and says what to do."""


def describe(path: Path, exc: BaseException) -> JournalError:
    text = str(exc)
    low = text.lower()
    if "file is not a database" in low or "not a database" in low:
        what = ("is not an eagle-console journal (SQLite: file is not a database): move it aside to start a new "
                "history, or restore it from a backup")
    elif "malformed" in low or "corrupt" in low:
        what = (f"is corrupt (SQLite: {text}): copy what can be read with `sqlite3 {path} .recover | sqlite3 "
                f"recovered.db`, then move the damaged file aside")
    elif "full" in low or ("i/o error" in low and _disk_full(path)):
        what = (f"cannot be written: the disk is full (SQLite: {text}); free space — runs keep their exit in "
                f"their run spec and it is recorded when space returns")
    elif "readonly" in low or "read-only" in low or "unable to open" in low:
        what = (f"cannot be written (SQLite: {text}): a read-only mount or another owner; it can still "
                f"be read (`status`, a read-only console)")
    elif "locked" in low or "busy" in low:
        what = f"is locked by another process for too long (SQLite: {text}); try again"
    else:
        what = f"cannot be used (SQLite: {text})"
    return JournalError(f"the journal {path} {what}")


def closed_to_us(path: Path, exc: OSError) -> JournalError:
    """The journal of a plan whose state dir is another user's (private by design: it keeps the plan's
    `[env]` values and the steps' logs): whose it is and what to do, not `internal error: PermissionError`."""
    from eagle_console.statedir import closed_note

    whose = closed_note(path, write=True) or exc.strerror or str(exc)
    return JournalError(
        f"the journal {path} cannot be opened: permission denied ({whose}; a plan's state is its owner's "
        f"alone: it keeps the plan's [env] values and the steps' logs). Open the plan as its owner, or keep "
        f"a history of your own with --state-dir DIR or EAGLE_CONSOLE_STATE=DIR (their runs are not in it)")


@contextmanager
def said(path: Path) -> Iterator[None]:
    """SQLite's errors on the journal at `path` become a JournalError that names the file and what to do."""
    try:
        yield
    except sqlite3.DatabaseError as exc:
        raise describe(path, exc) from None


def _disk_full(path: Path) -> bool:
    """SQLite reports a write into a full filesystem's WAL or index as a plain "disk I/O error"."""
    try:
        return shutil.disk_usage(path.parent).free < 1 << 20
    except OSError:
        return False


def check_version(conn: sqlite3.Connection, path: Path, *, migrate: bool) -> None:
    """Refuse a journal from a newer eagle-console; bring an older one up to date (inside the caller's
    write transaction) when `migrate`, else read it as it is (its tables are a subset we understand)."""
    version = int(conn.execute("PRAGMA user_version").fetchone()[0])
    if version > SCHEMA_VERSION:
        raise JournalError(f"the journal {path} has schema version {version}, newer than this eagle-console "
                           f"knows ({SCHEMA_VERSION}): upgrade eagle-console to read it")
    if not migrate:
        return
    while version < SCHEMA_VERSION:
        step = MIGRATIONS[version]
        if callable(step):
            step(conn)
        elif step:
            conn.executescript(step)
        version += 1
        conn.execute(f"PRAGMA user_version = {version}")


def file_identity(path: Path) -> tuple[int, int] | None:
    try:
        st = path.stat()
    except OSError:
        return None
    return st.st_dev, st.st_ino


def replaced_note(path: Path, opened: tuple[int, int] | None) -> str | None:
    """Said when the journal file an open Journal reads is no longer at its path (deleted, or replaced by
    another file): SQLite keeps reading the old one, so what is shown stops following what happens."""
    now = file_identity(path)
    if opened is None or now == opened:
        return None
    if now is None:
        return (f"the journal {path} was deleted while open: what is shown is the deleted file's history and "
                "new runs write a new, empty journal; restore it from a backup, then restart")
    return (f"the journal {path} was replaced by another file while open: what is shown is the old file's "
            "history; restart to read the new one")


def history_lost_note(path: Path, last_event_id: int) -> str | None:
    """Said when a journal with no events sits beside run logs: it was deleted or truncated and every step
    now reads "pending" — which would otherwise pass silently."""
    if last_event_id > 0:
        return None
    logs = logs_dir(path.parent)
    try:
        count = sum(1 for entry in os.scandir(logs) if entry.name.endswith(".log"))
    except OSError:
        return None
    if not count:
        return None
    return (f"the journal {path} holds no history, but {count} run log(s) in {logs} show steps ran before: it "
            "was deleted or truncated, so every step reads pending; restore it from a backup, or mark the "
            "steps that are done")
