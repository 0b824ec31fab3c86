"""A free TCP port on loopback, for what this machine starts itself (the demo's server, a local Ray
cluster). Another process may take it before it is bound again: callers that can retry do."""

from __future__ import annotations

import socket


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])
