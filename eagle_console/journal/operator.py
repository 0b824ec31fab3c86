"""Who is at the keyboard: the name recorded beside every mark, note and run."""

from __future__ import annotations

import getpass
import os


def current_operator() -> str:
    """`alice (10.1.2.3)`: SUDO_USER, else USER, plus the ssh client's address when there is one."""
    name = os.environ.get("SUDO_USER") or os.environ.get("USER") or os.environ.get("LOGNAME")
    if not name:
        try:
            name = getpass.getuser()
        except Exception:  # no passwd entry in some containers
            name = f"uid{os.getuid()}"
    ssh = os.environ.get("SSH_CLIENT") or os.environ.get("SSH_CONNECTION")
    if ssh:
        return f"{name} ({ssh.split()[0]})"
    return name
