"""Who is at the keyboard: the name recorded beside every mark, note and run."""

from __future__ import annotations

import getpass
import os

# Which face acted, recorded beside `who` (journal events' `face`): the console, the CLI, or an AI agent through
# `eagle-console mcp`, named by the client name its MCP initialize gave.
CONSOLE_FACE = "console"
CLI_FACE = "cli"
AGENT_PREFIX = "agent:"
_CLIENT_NAME_MAX = 64


def agent_face(client_name: str | None) -> str:
    """`agent:<client>`: the client's own name, cut to printable ASCII without spaces (it comes from the peer,
    and lands on every console's screen and in every export)."""
    name = "".join(c if c.isascii() and c.isprintable() and not c.isspace() else "_" for c in (client_name or ""))
    return AGENT_PREFIX + (name[:_CLIENT_NAME_MAX] or "unnamed")


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
