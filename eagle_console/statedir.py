"""The state dir is the operator's alone: directories 0700, files 0600, whatever the umask.

Its files hold what another user must not read: the journal keeps the plan's `[env]` values (an HF
token), logs print whatever a step prints, artifacts keep backups of edited files. Modes are set when a
file or directory is created (os.open / mkdir with the mode; a umask can only take bits away), and the
journal tightens the state dir itself when it opens it, so a state dir made by an older version is
closed too.

Its layout is spelled here once: `journal.db`, `runs/` (run specs, their exit and held slots),
`logs/` (step and rollback logs), `artifacts/<step>/` (what a built-in keeps for its undo).

Root acting on an operator's plan (`sudo eagle-console run …`, a kill of another user's orphan) writes into
the operator's state dir: what it creates there goes to the folder's owner, as SQLite gives the journal's
-wal/-shm to the database's owner. Before, those files were root's and 0600, and the operator's own console
said their step's log did not exist and its undo had "no backup recorded".
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
            continue
        give_to_folder_owner(d, d.parent)
    return path


def give_to_folder_owner(target: int | Path, folder: Path) -> None:
    """As root: give `target` (a file descriptor, or a directory just made) to `folder`'s owner when that is
    not root. Only for what the caller has just created (O_EXCL, mkdir): never a name planted beforehand, and
    a directory is changed without following a link swapped in since."""
    if os.geteuid() != 0:
        return
    try:
        st = os.stat(folder)
        if st.st_uid == 0:
            return
        if isinstance(target, int):
            os.fchown(target, st.st_uid, st.st_gid)
        else:
            os.chown(target, st.st_uid, st.st_gid, follow_symlinks=False)
    except OSError:
        pass  # best effort, as tighten(): never fails a run


def open_created(path: str | os.PathLike[str], flags: int, mode: int = FILE_MODE) -> int:
    """`os.open(path, flags, mode)`; a file it creates as root goes to its folder's owner (above)."""
    if os.geteuid() != 0 or not flags & os.O_CREAT:
        return os.open(path, flags, mode)
    try:
        fd = os.open(path, flags | os.O_EXCL, mode)
    except FileExistsError:
        if flags & os.O_EXCL:
            raise
        return os.open(path, flags, mode)  # there already: whoever's it is stays so
    give_to_folder_owner(fd, Path(os.path.abspath(path)).parent)
    return fd


def closed_note(path: Path, write: bool = False) -> str | None:
    """`it is root's` (the path itself) or `/x/.eagle-console is root's, closed to other users` (a folder
    on the way): _blocked_by said, for the journal's and the log readers' messages; None if nothing is."""
    where = _blocked_by(path, write)
    if where is None:
        return None
    return f"it is {where[1]}'s" if where[0] == Path(path) else f"{where[0]} is {where[1]}'s, {where[2]}"


def _blocked_by(path: Path, write: bool = False) -> tuple[Path, str, str] | None:
    """The folder (or the file) on the way to `path` that this user may not read — or, with `write`, the
    nearest existing folder they may not create `path` in — its owner's name, and which of the two: what an
    operator is told when another user's state dir is closed to them. None if nothing is."""
    import pwd

    for p in [Path(path), *Path(path).parents]:
        try:
            st = os.stat(p)
        except OSError:
            continue  # not there, or inside a folder closed to us: the folder above is the one to name
        if not os.access(p, os.R_OK | (os.X_OK if p.is_dir() else 0)):
            why = "closed to other users"
        elif write and p != Path(path) and not os.access(p, os.W_OK):
            why = "not writable by this user"
        else:
            return None
        try:
            owner = pwd.getpwuid(st.st_uid).pw_name
        except KeyError:
            owner = f"uid {st.st_uid}"
        return p, owner, why
    return None


def tighten(path: Path, mode: int) -> None:
    """chmod `path` to `mode` if it exists and is ours to change (best effort: never fails a run)."""
    try:
        if (os.stat(path).st_mode & 0o777) != mode:
            os.chmod(path, mode)
    except OSError:
        pass


def private_opener(path: str, flags: int) -> int:
    """`open(..., opener=private_opener)`: a file it creates is 0600 (its folder owner's, made by root)."""
    return open_created(path, flags, FILE_MODE)


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
        os.close(open_created(path, os.O_RDWR | os.O_CREAT | os.O_EXCL, FILE_MODE))
    except OSError:
        pass  # it exists (never open+close an open database: that drops its POSIX locks), or is not ours
    for f in (path, Path(f"{path}-wal"), Path(f"{path}-shm")):
        tighten(f, FILE_MODE)
