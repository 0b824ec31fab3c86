"""A free TCP port on loopback, for what this machine starts itself (the demo's server, a local Ray
cluster). Another process may take it before it is bound again: callers that can retry do.

The port is drawn at random from below the kernel's ephemeral range (net.ipv4.ip_local_port_range,
32768-60999 by default) and above Ray's default worker ports (10002-19999). A port that `bind(("", 0))`
returns lies inside that range, where the kernel also hands out the local port of every outgoing
connection: on a busy node (Ray's gRPC, HTTP clients) one of those took a port between its pick and the
server's bind. Below the range only another explicit bind can take it, and a random draw makes two pickers
at the same moment unlikely to choose alike (the kernel's own pick may return a just-released port again).
A process never gets the same port twice (up to GIVEN_MAX ports): a caller that picks several before it
binds any (a local Ray cluster's start: 16 ports for two nodes) could otherwise draw one twice, in up to
~1 % of starts (120 pairs among 16 draws from ~12,700), and that node's `ray start` fails.

`EAGLE_CONSOLE_PORTS=LOW-HIGH` confines the draw to those ports (a firewall that opens only some; several
consoles or test workers on one machine each given their own, so none can draw a port another drew and
has not bound yet)."""

from __future__ import annotations

import os
import secrets
import socket
import sys
import threading
from pathlib import Path

# `ray start`'s default --min-worker-port/--max-worker-port are 10002/19999 (ray/scripts/scripts.py, Ray 2.60.0).
FLOOR = 20000
RANGE_FILE = Path("/proc/sys/net/ipv4/ip_local_port_range")
TRIES = 64
ENV = "EAGLE_CONSOLE_PORTS"
GIVEN_MAX = 4096  # then forgotten: a process that picked this many has long bound (or dropped) the first ones


class NoFreePort(OSError):
    """Every port of the operator's EAGLE_CONSOLE_PORTS is taken: the machine's state, said as such (never
    an "internal error"), and nothing picked outside the range."""


_given: set[int] = set()
_warned: set[str] = set()
_lock = threading.Lock()


def ephemeral_range(path: Path = RANGE_FILE) -> tuple[int, int]:
    """The kernel's range for outgoing connections' local ports; Linux's default when it cannot be read."""
    try:
        low, high = (int(x) for x in path.read_text().split()[:2])
    except (OSError, ValueError):
        return 32768, 60999
    return low, high


def free_port(range_file: Path = RANGE_FILE) -> int:
    with _lock:
        port = _pick(range_file)
        if len(_given) >= GIVEN_MAX:
            _given.clear()
        _given.add(port)
        return port


def chosen_range(value: str | None = None) -> tuple[int, int] | None:
    """`EAGLE_CONSOLE_PORTS` as (low, high), both included; None when unset, or when it is not LOW-HIGH
    (said once on stderr, then the default range is used: a port is still needed)."""
    value = os.environ.get(ENV, "") if value is None else value
    if not value:
        return None
    low, sep, high = value.partition("-")
    try:
        lo, hi = int(low), int(high)
    except ValueError:
        lo = hi = 0
    if sep and 1024 <= lo <= hi <= 65535:
        return lo, hi
    if value not in _warned:
        _warned.add(value)
        print(f"eagle-console: warning: {ENV}={value!r} is not LOW-HIGH (two ports from 1024 to 65535, "
              "LOW <= HIGH): ignored", file=sys.stderr)
    return None


def _pick(range_file: Path) -> int:
    chosen = chosen_range()
    if chosen is not None:  # the operator's range only: never a port outside it
        low, high = chosen
        start = low + secrets.randbelow(high - low + 1)
        for port in [*(low + secrets.randbelow(high - low + 1) for _ in range(TRIES)),
                     *range(start, high + 1), *range(low, start)]:
            if port not in _given and _bindable(port):
                return port
        raise NoFreePort(f"no free port in {ENV}={low}-{high}: each is listened on or held by a connection "
                         f"(ss -tanp 'sport >= :{low} and sport <= :{high}' says by what); free one or widen "
                         "the range")
    span = ephemeral_range(range_file)[0] - FLOOR
    if span > 0:  # a host that opened its whole port space to outgoing connections leaves no room: bind 0
        for _ in range(TRIES):
            port = FLOOR + secrets.randbelow(span)
            if port not in _given and _bindable(port):
                return port
    for _ in range(TRIES):
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = int(s.getsockname()[1])
        if port not in _given:
            return port
    return port


def _bindable(port: int) -> bool:
    """Free as the servers that take it bind: with SO_REUSEADDR (SGLang 0.5.23's `is_port_available`,
    srt/utils/network.py:181-195; the simulated server's `allow_reuse_address`; asyncio's `create_server` on
    Linux). A port whose last server closed its connections first stays in TIME_WAIT for 60 s; they bind it,
    a bare bind does not, and a one-port EAGLE_CONSOLE_PORTS read "no free port" after a restart."""
    return _bind_error(socket.AF_INET, ("127.0.0.1", port)) is None


def cannot_listen(host: str, port: int) -> OSError | None:
    """Why a server could not listen on host:port (in use, not this machine's address, a port below 1024),
    tried as asyncio's `create_server` (the browser console's server) binds; None when it can. Said before
    a server prints its URL, not as its internal error after."""
    try:
        infos = socket.getaddrinfo(host or None, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    except socket.gaierror as exc:
        return exc
    for family, _type, _proto, _name, addr in infos:
        error = _bind_error(family, addr)
        if error is not None:
            return error
    return None


def _bind_error(family: int, addr: tuple) -> OSError | None:
    with socket.socket(family, socket.SOCK_STREAM) as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        if family == socket.AF_INET6:  # as asyncio: each family its own socket
            s.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
        try:
            s.bind(addr)
        except OSError as exc:
            return exc
    return None
