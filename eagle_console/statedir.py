"""The state dir is the operator's alone: directories 0700, files 0600, whatever the umask.

Its files hold what another user must not read: the journal keeps the plan's `[env]` values (an HF
token), logs print whatever a step prints, artifacts keep backups of edited files. Modes are set when a
file or directory is created (os.open / mkdir with the mode; a umask can only take bits away), and the
journal tightens the state dir itself when it opens it, so a state dir made by an older version is
closed too.
"""

from __future__ import annotations

import os
from pathlib import Path

DIR_MODE = 0o700
FILE_MODE = 0o600


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
