"""Our own processes, told by a file they hold open: no symlink, `python -c` or process title hides it.

A kill decides what never to signal from what the node shows. A command line is the process's to choose
(`ec` as a symlink to the entry point, `python -c "from eagle_console.cli import main; main()"`, a renamed
interpreter, setproctitle), so it is one signal only. Each eagle-console process that a kill must spare
opens one of the package's own files read-only when it starts and keeps it open until it exits:

  <package>/cli/__init__.py     a console or a CLI command (its terminal's session is spared too)
  <package>/engine/__init__.py  a run's supervisor or built-in action (its session is the run's)

/proc/PID/fd shows the link whatever the process is called. The descriptor is close-on-exec, so a service
action that execs its server leaves the server unmarked (fair game for a kill), and subprocess children
never inherit it (close_fds). It dies with the process, even under SIGKILL: nothing to clean up, no stale
entry, nothing to write (a full or read-only disk cannot turn it off). docs/decisions.md says why not a pid
file. Reading another user's fds needs root, and a kill spares other users' processes without root anyway.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

CONSOLE = "console"
ENGINE = "engine"
_FOLDER_KIND = {"cli": CONSOLE, "engine": ENGINE}
# The link's text: any install of the package (another venv, a wheel), " (deleted)" once it was upgraded
# in place while the process runs; a sourceless install holds the .pyc.
_MARK = re.compile(r"/eagle_console/(cli|engine)/__init__\.pyc?(?: \(deleted\))?$")
_held: dict[str, int] = {}


def marker_file(kind: str) -> Path:
    """The package file a process of `kind` holds open."""
    import eagle_console

    folder = next(name for name, k in _FOLDER_KIND.items() if k == kind)
    package = Path(eagle_console.__file__).resolve().parent
    for name in ("__init__.py", "__init__.pyc"):
        if (package / folder / name).exists():
            return package / folder / name
    return package / folder / "__init__.py"


def mark(kind: str = CONSOLE) -> bool:
    """Hold this process's marker open from now to its exit (idempotent); False if it cannot be opened
    (a zipapp has no file to open: then the command line and the journal are the signals left)."""
    if kind in _held:
        return True
    try:
        # os.open: close-on-exec by default (PEP 446), and a bare fd that no garbage collection closes
        _held[kind] = os.open(marker_file(kind), os.O_RDONLY | os.O_CLOEXEC)
    except OSError:
        return False
    return True


def kind_of_link(link: str) -> str | None:
    """"console" / "engine" if `link` (a /proc/PID/fd target) is a marker, else None."""
    found = _MARK.search(link)
    return _FOLDER_KIND[found.group(1)] if found else None


def marked_kind(pid: int, proc_root: str = "/proc") -> str | None:
    """The kind of marker `pid` holds (console wins over engine), or None (none, gone, or unreadable)."""
    fd_dir = f"{proc_root}/{pid}/fd"
    try:
        fds = os.listdir(fd_dir)
    except OSError:
        return None
    kinds: set[str] = set()
    for fd in fds:
        try:
            link = os.readlink(f"{fd_dir}/{fd}")
        except OSError:
            continue
        if "eagle_console" in link and (kind := kind_of_link(link)):
            kinds.add(kind)
    return CONSOLE if CONSOLE in kinds else ENGINE if kinds else None


def marked_processes(proc_root: str = "/proc") -> dict[int, str]:
    """Every process of the node that holds a marker: pid -> kind. One readlink per fd of every process
    whose fds we may read (~2-5 ms on a node of a few hundred processes, as the GPU holder scan)."""
    found: dict[int, str] = {}
    try:
        entries = os.listdir(proc_root)
    except OSError:
        return found
    for name in entries:
        if name.isdigit() and (kind := marked_kind(int(name), proc_root)):
            found[int(name)] = kind
    return found
