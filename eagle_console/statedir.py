"""The state dir is the operator's alone: directories 0700, files 0600, whatever the umask.

Its files hold what another user must not read: the journal keeps the plan's `[env]` values (an HF
token), logs print whatever a step prints, artifacts keep backups of edited files. Modes are set when a
file or directory is created (os.open / mkdir with the mode; a umask can only take bits away), and the
journal tightens the state dir itself when it opens it, so a state dir made by an older version is
closed too.

Its layout is spelled here once: `journal.db`, `runs/` (run specs, their exit and held slots),
`logs/` (step and rollback logs), `artifacts/<step>/` (what a built-in keeps for its undo).
"""

from __future__ import annotations

import os
from pathlib import Path

DIR_MODE = 0o700
FILE_MODE = 0o600
JOURNAL_FILE = "journal.db"


def journal_path(state_dir: Path) -> Path:
    return Path(state_dir) / JOURNAL_FILE


def runs_dir(state_dir: Path) -> Path:
    """Run and rollback specs, each run's exit slot and held slot."""
    return Path(state_dir) / "runs"


def logs_dir(state_dir: Path) -> Path:
    """Step and rollback logs (a step's own `log` path aside)."""
    return Path(state_dir) / "logs"


def artifacts_root(state_dir: Path) -> Path:
    return Path(state_dir) / "artifacts"


def artifacts_dir(state_dir: Path, step_id: str) -> Path:
    """What step `step_id`'s built-in keeps from a run to its undo (a backup, a multi-node server's ranks)."""
    return artifacts_root(state_dir) / step_id


def step_log(state_dir: Path, step_id: str, run_id: int) -> Path:
    return logs_dir(state_dir) / f"{step_id}-{run_id}.log"


def rollback_log(state_dir: Path, rollback_id: int) -> Path:
    return logs_dir(state_dir) / f"rollback-{rollback_id}.log"


def private_dirs(path: Path) -> Path:
    """`path` and any missing parents, created 0700 (existing directories are left as they are)."""
    path = Path(path)
    missing, d = [], path
    while not d.exists() and d != d.parent:
        missing.append(d)
        d = d.parent
    for d in reversed(missing):
        try:
            d.mkdir(mode=DIR_MODE)
        except FileExistsError:  # made by another process at the same instant
            pass
    return path


def tighten(path: Path, mode: int) -> None:
    """chmod `path` to `mode` if it exists and is ours to change (best effort: never fails a run)."""
    try:
        if (os.stat(path).st_mode & 0o777) != mode:
            os.chmod(path, mode)
    except OSError:
        pass


def private_opener(path: str, flags: int) -> int:
    """`open(..., opener=private_opener)`: a file it creates is 0600."""
    return os.open(path, flags, FILE_MODE)


def write_private(path: Path, data: str | bytes) -> None:
    """Write a whole file (created 0600)."""
    mode = "wb" if isinstance(data, bytes) else "w"
    with open(path, mode, opener=private_opener) as f:
        f.write(data)


def private_database(path: Path) -> None:
    """The journal's folder 0700 and its database 0600, before SQLite opens it (SQLite gives -wal/-shm the
    database's mode); also tightens a state dir made by an older version, or by mkdir -p."""
    private_dirs(path.parent)
    tighten(path.parent, DIR_MODE)
    try:
        os.close(os.open(path, os.O_RDWR | os.O_CREAT | os.O_EXCL, FILE_MODE))
    except OSError:
        pass  # it exists (never open+close an open database: that drops its POSIX locks), or is not ours
    for f in (path, Path(f"{path}-wal"), Path(f"{path}-shm")):
        tighten(f, FILE_MODE)
