"""How the Ray driver (cluster/driver.py) serves its askers: JSON lines over Unix sockets, each peer's uid
checked, and when a kept driver ends. No Ray here: driver.py's operations do the asking.

A kept driver holds `ray-KEY.lock` (flock) all its life and is the only process that binds or removes
`ray-KEY.sock`: a second driver started at the same moment finds the lock taken and exits 0 (its asker then
connects to the first), and a dead driver's socket is removed by the next one, under the lock.
"""

from __future__ import annotations

import contextlib
import json
import os
import socket
import sys
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from eagle_console.cluster.keptdriver import peer, probe_gcs, send_timeout

HELLO_ID = -1  # {"id": -1, "pid": PID}: said at once to every asker, before (or without) the connect's outcome
EXIT_MARK = "driver exits: "  # the log line an asker quotes when its driver ended (cluster/link.py)
# How often a kept driver checks that its head's GCS port still answers. While the GCS is gone Ray's error
# listener in this process spins a core (ray 2.60 `_private/worker.py` listen_error_messages), so the probe
# is what ends that: every 5 s the driver burned a median 1.6 CPU-s a head death, every 1 s 0.2-0.4
# (benchmarks/driver_head_loss.py), for one TCP connect a second to the GCS port (refused only when
# nothing listens there: a full accept queue drops, it does not refuse).
PROBE_EVERY_S = 1.0
LOST_S = 90.0  # a GCS port silent this long: the head is lost (Ray's client gives up after 60 s anyway)
SEND_S = 10.0  # an asker that does not read its answers for this long (stopped) is dropped


def log(message: str) -> None:
    sys.stderr.write(f"[{time.strftime('%Y-%m-%d %H:%M:%S')}] eagle-console driver {os.getpid()}: {message}\n")
    sys.stderr.flush()


class Conn:
    """One asker's connection: lines out under a lock, never blocking past SEND_S."""

    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock
        self.lock = threading.Lock()
        self.open = True
        send_timeout(sock, SEND_S)

    def send(self, message: dict[str, Any]) -> bool:
        data = (json.dumps(message, default=str) + "\n").encode()
        with self.lock:
            if not self.open:
                return False
            try:
                self.sock.sendall(data)
                return True
            except OSError:  # gone, or stopped past SEND_S
                self.open = False
                with contextlib.suppress(OSError):
                    self.sock.shutdown(socket.SHUT_RDWR)
                return False


class Server:
    """The askers of one driver: each gets the hello and the connect's outcome, and its requests are handled
    in a pool (`handle(conn, request)`), one thread each."""

    def __init__(self, handle: Callable[[Conn, dict[str, Any]], None], on_end: Callable[[Conn], None] | None = None) -> None:
        self.handle = handle
        self.on_end = on_end
        self.pool = ThreadPoolExecutor(max_workers=32, thread_name_prefix="ask")
        self.lock = threading.Lock()
        self.conns: set[Conn] = set()
        self.outcome: dict[str, Any] | None = None  # the connect's line, once known
        self.accepted = 0
        self.last = time.monotonic()  # the last asker's coming, going or request
        self.closing = False  # idle for good: an asker who comes now is closed unanswered and starts another

    def add(self, sock: socket.socket) -> Conn | None:
        conn = Conn(sock)
        with self.lock:
            if self.closing:
                sock.close()
                return None
            self.conns.add(conn)
            self.accepted += 1
            self.last = time.monotonic()
            conn.send({"id": HELLO_ID, "pid": os.getpid()})
            if self.outcome is not None:
                conn.send(self.outcome)
        threading.Thread(target=self._read, args=(conn,), daemon=True, name="asker").start()
        return conn

    def connected(self, outcome: dict[str, Any]) -> None:
        """The connect's outcome, to every asker now and to each that comes later."""
        with self.lock:
            self.outcome = outcome
            for conn in list(self.conns):
                conn.send(outcome)

    def _read(self, conn: Conn) -> None:
        with contextlib.suppress(OSError):
            for raw in conn.sock.makefile("rb"):
                self.last = time.monotonic()
                try:
                    request = json.loads(raw)
                except ValueError:
                    continue
                if isinstance(request, dict):
                    self.pool.submit(self.handle, conn, request)
        with self.lock:
            self.conns.discard(conn)
            conn.open = False
            self.last = time.monotonic()
        with contextlib.suppress(OSError):
            conn.sock.close()
        if self.on_end is not None:
            self.on_end(conn)

    def close_all(self) -> None:
        """Every asker's connection shut, none taken any more: a driver on its way out answers nothing, and
        what is sent to it fails at once (the asker asks another driver) instead of waiting on it."""
        with self.lock:
            self.closing = True
            for conn in list(self.conns):
                with conn.lock, contextlib.suppress(OSError):
                    conn.open = False
                    conn.sock.shutdown(socket.SHUT_RDWR)

    def close_if_idle(self, keep: float) -> bool:
        """No asker for `keep` seconds: from now on none is taken (the check and the closing at once, so an
        asker is never answered `hello` by a driver about to exit)."""
        with self.lock:
            if self.conns or time.monotonic() - self.last < keep:
                return False
            self.closing = True
            return True


# -- a kept driver: its lock, its socket, its watch ----------------------------------------------------------


def listen(path: Path) -> tuple[socket.socket, int]:
    """The socket at `path` (0600), a dead driver's removed first (we hold the lock); with its inode."""
    with contextlib.suppress(FileNotFoundError):
        os.unlink(path)
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    old = os.umask(0o177)
    try:
        s.bind(os.fspath(path))
    finally:
        os.umask(old)
    s.listen(64)
    return s, os.stat(path).st_ino


def accept(listener: socket.socket, server: Server) -> None:
    """Every asker of this user is served; another uid (root included) is told no and closed."""
    me = os.getuid()
    while True:
        try:
            sock, _ = listener.accept()
        except OSError:
            return
        pid, uid, _ = peer(sock)
        if uid != me:
            log(f"refused a connection from uid {uid} (pid {pid}): this driver serves uid {me} only")
            threading.Thread(target=_refuse, args=(sock, me, uid), daemon=True, name="refuse").start()
            continue
        server.add(sock)


def _refuse(sock: socket.socket, me: int, uid: int) -> None:
    """One line to another uid's connection, then closed. What it sent is discarded unparsed, and only then
    the socket closed: closing with unread bytes resets the peer, which may lose the line."""
    with contextlib.suppress(OSError), sock:
        send_timeout(sock, 1.0)
        sock.sendall((json.dumps({"id": 0, "error": f"refused: this Ray driver serves uid {me} only, not uid {uid}",
                                  "kinds": ["PeerRefused"]}) + "\n").encode())
        sock.shutdown(socket.SHUT_WR)
        sock.settimeout(2.0)
        for _ in range(64):  # at most 64 KiB, 2 s a read: a peer cannot hold this thread long
            if not sock.recv(1024):
                break


def remove_socket(path: Path, inode: int) -> None:
    """Our socket removed (only if it still is ours: the same inode)."""
    with contextlib.suppress(OSError):
        if os.stat(path).st_ino == inode:
            os.unlink(path)


def watch(server: Server, address: str, keep: float, leave: Callable[..., None]) -> None:
    """A kept driver's end: `keep` seconds without an asker, or its head lost (refused, or LOST_S silent)."""
    silent_since: float | None = None
    while True:
        time.sleep(PROBE_EVERY_S)
        if server.close_if_idle(keep):
            leave(f"no asker for {keep:g}s", polite=True)
        why, refused = probe_gcs(address)
        if refused:
            leave(f"{why} (the head's GCS is gone)")
        if why is None:
            silent_since = None
        elif silent_since is None:
            silent_since = time.monotonic()
        elif time.monotonic() - silent_since >= LOST_S:
            leave(f"{why}, for {LOST_S:g}s (the head is lost)")
