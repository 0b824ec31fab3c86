"""The console's and the CLI's link to the cluster: a Ray driver in another process, asked with deadlines.

`call(address, op, timeout, **args)` asks the driver of `address` and waits at most `timeout` seconds. The
driver (cluster/driver.py) is the user's *kept* one, reached on its Unix socket and started if there is none
(cluster/keptdriver.py: it outlives the command that started it, so the next fresh `gpus --cluster` skips
`import ray` and `ray.init`), or with EAGLE_CONSOLE_RAY_KEEP_S=0 a child of this process that ends with it.
No Ray import here: Ray's client cannot end this process, block it, or write on its terminal. The head's
state is kept per address: a call the GCS did not answer, a refused or silent GCS port, or the driver ended by
Ray, make the head *unreachable since* that moment (`head_down`), and the next calls say so at once instead
of waiting again — the driver is asked again at most every RETRY_S, after a TCP probe of the GCS port answered.

Deadlines (seconds), from the environment so tests need not wait Ray's own minute:
  EAGLE_CONSOLE_RAY_CONNECT_S  reaching or starting the driver and its ray.init (default 20)
  EAGLE_CONSOLE_RAY_CALL_S     a question to the GCS or the Jobs API (default 10)
  EAGLE_CONSOLE_RAY_RETRY_S    how long a head found unreachable is not asked again (default 5)
  EAGLE_CONSOLE_RAY_KEEP_S     how long a kept driver stays without an asker (default 300; 0: none kept)
"""

from __future__ import annotations

import itertools
import json
import os
import threading
import time
from concurrent.futures import Future
from concurrent.futures import TimeoutError as FutureTimeout
from pathlib import Path
from typing import Any

from eagle_console.cluster import keptdriver
from eagle_console.cluster.keptdriver import PROBE_S, NoDriver, Opened


def _env_s(name: str, default: float) -> float:
    try:
        return max(0.1, float(os.environ.get(name, "")))
    except ValueError:
        return default


CONNECT_S = _env_s("EAGLE_CONSOLE_RAY_CONNECT_S", 20.0)
CALL_S = _env_s("EAGLE_CONSOLE_RAY_CALL_S", 10.0)
RETRY_S = _env_s("EAGLE_CONSOLE_RAY_RETRY_S", 5.0)
HELLO_S = min(CONNECT_S, 3.0)  # a kept driver says its first line at once: one silent this long is stuck
EXIT_MARK = "driver exits: "  # cluster/driverserve.py's last line in its log, when it ended by itself


class ClusterError(Exception):
    """The cluster cannot be reached or did not answer (no head at the address, Ray not installed, a deadline)."""


class HeadUnreachable(ClusterError):
    """The head (its GCS) does not answer: said with since when."""


def error_point(exc: BaseException) -> str:
    """A remote error's point, its last non-blank line: Ray's RayTaskError and the job head's 500 carry the
    whole remote traceback, in colour."""
    import re

    lines = [ln for ln in re.sub(r"\x1b\[[0-9;]*m", "", str(exc)).splitlines() if ln.strip()]
    return lines[-1].strip() if lines else type(exc).__name__


class RemoteError(ClusterError):
    """What Ray raised in the driver, with its class names (`kinds`): a dead actor, a timeout on the node."""

    def __init__(self, message: str, kinds: list[str]) -> None:
        super().__init__(message)
        self.kinds = kinds

    def is_a(self, name: str) -> bool:
        return name in self.kinds


class _Link:
    """One connection to a driver: the answers routed to their futures by id."""

    def __init__(self, opened: Opened) -> None:
        self.opened = opened
        self.ready: Future = Future()
        self.pending: dict[int, Future] = {}
        self.ids = itertools.count(1)
        self.closed = threading.Event()

    @property
    def log(self) -> Path:
        return self.opened.log

    def send(self, message: dict[str, Any]) -> None:
        self.opened.sock.sendall((json.dumps(message) + "\n").encode())


class _Head:
    """One address's driver connection and what is known of its head."""

    def __init__(self, address: str) -> None:
        self.address = address
        self.link: _Link | None = None
        self.lock = threading.Lock()
        self.down_since: float | None = None
        self.why = ""
        self.started_at = 0.0
        self.checked_at = 0.0  # when the head, known down, was last probed

    @property
    def ready(self) -> Future:
        return self.link.ready if self.link is not None else Future()

    # -- the head's state ---------------------------------------------------------------------------------

    def mark_down(self, why: str) -> None:
        if self.down_since is None:
            self.down_since = time.time()
        self.why = why
        self.checked_at = time.monotonic()

    def gate(self) -> None:
        """A head known unreachable is not asked again for RETRY_S; then its GCS port is probed, and only a
        port that answers lets the next call try."""
        if self.down_since is None:
            return
        if time.monotonic() - self.checked_at < RETRY_S:
            raise HeadUnreachable(self.down_text() or "head unreachable")
        why = probe(self.address)
        self.checked_at = time.monotonic()
        if why:
            self.why = why
            raise HeadUnreachable(self.down_text() or why)

    def mark_up(self) -> None:
        self.down_since, self.why = None, ""

    def down_text(self) -> str | None:
        if self.down_since is None:
            return None
        return f"head unreachable since {time.strftime('%H:%M:%S', time.localtime(self.down_since))}: {self.why}"

    # -- the driver ---------------------------------------------------------------------------------------

    def _alive(self) -> bool:
        return self.link is not None and not self.link.closed.is_set()

    def ensure(self, deadline: float) -> _Link:
        """A connection to a driver for this address, reached or started (until `deadline`, monotonic) if
        there is none; raises at once if the head is known unreachable and RETRY_S has not passed, or a probe
        of its GCS port fails."""
        self.gate()
        with self.lock:
            if self._alive():
                assert self.link is not None
                return self.link
            if self.down_since is None or time.monotonic() - self.started_at >= RETRY_S:
                pass  # a first start, or a restart after RETRY_S
            else:
                raise HeadUnreachable(self.down_text() or "head unreachable")
            self.started_at = time.monotonic()
            why = probe(self.address)
            if why:
                self.mark_down(why)
                raise HeadUnreachable(self.down_text() or why)
            return self._open(deadline)

    def _open(self, deadline: float) -> _Link:
        keep = keptdriver.keep_s()
        place = keptdriver.place_for(self.address) if keep > 0 else None
        try:
            opened = (keptdriver.open_kept(self.address, place, keep, deadline, HELLO_S) if place is not None
                      else keptdriver.open_child(self.address))
        except NoDriver as exc:
            raise ClusterError(f"cannot reach the Ray cluster at {self.address}: {exc}") from None
        link = self.link = _Link(opened)
        if opened.first:
            self._take(link, opened.first)
        threading.Thread(target=self._read, args=(link,), daemon=True, name="ray-driver-answers").start()
        return link

    def _take(self, link: _Link, raw: bytes) -> None:
        try:
            msg = json.loads(raw)
        except ValueError:
            return
        rid = msg.get("id")
        if rid == 0:
            _settle(link.ready, msg)
        elif rid != -1:  # -1: the driver's hello (it is alive)
            fut = link.pending.pop(rid, None)
            if fut is not None:
                _settle(fut, msg)

    def _read(self, link: _Link) -> None:
        try:
            for raw in link.opened.lines:
                self._take(link, raw)
        except (OSError, ValueError):  # our own close
            pass
        link.closed.set()
        child = link.opened.child
        if child is not None and not link.opened.kept:
            child.wait()
        why = self.death_reason(link)
        connected = link.ready.done() and link.ready.exception() is None
        # it lost the head (Ray ended it, or it saw the GCS gone): the head is down. Ended otherwise (stopped by
        # the operator, replaced by another command as stuck): the next call reaches or starts another.
        if connected and link is self.link and ("GCS" in why or "head is lost" in why):
            self.mark_down(why)
        err = HeadUnreachable(self.down_text() or why) if self.down_since else ClusterError(why)
        _settle(link.ready, {"error": why, "kinds": ["DriverExited"]})
        for fut in list(link.pending.values()):
            if not fut.done():
                fut.set_exception(err)
        link.pending.clear()

    def death_reason(self, link: _Link) -> str:
        """Why the driver ended: its own last word, or Ray's last error line, in its log."""
        text = ""
        try:
            text = link.log.read_text(errors="replace")[-20000:]
        except OSError:
            pass
        lines = text.splitlines()
        for line in reversed(lines):
            if EXIT_MARK in line:
                return line.split(EXIT_MARK, 1)[1].strip()[:300]
        for marker in ("Failed to connect to GCS", "uthentication", "Unauthenticated", "UNAUTHENTICATED"):
            for line in reversed(lines):
                if marker in line:
                    return f"the Ray driver ended: {_tidy(line)}"
        child = link.opened.child
        code = child.returncode if child is not None and not link.opened.kept else None
        return f"the Ray driver ended (exit {code})" if code is not None else "the Ray driver ended"

    def token_refused(self) -> str | None:
        """The GCS's refusal of our token, from the driver's log (Ray 2.60: gcs_client.cc "Failed to get
        cluster ID from GCS server: Unauthenticated: ... InvalidAuthToken")."""
        if self.link is None:
            return None
        try:
            text = self.link.log.read_text(errors="replace")[:20000]
        except OSError:
            return None
        for line in text.splitlines():
            if "InvalidAuthToken" in line or "Unauthenticated" in line:
                return _tidy(line)
        return None

    def stop(self, end_kept: bool = False) -> None:
        """Our connection closed: our own child ends with it; a kept driver stays, unless `end_kept` (it
        cannot serve anyone: its token was refused)."""
        link, self.link = self.link, None
        if link is None:
            return
        opened = link.opened
        try:
            opened.sock.shutdown(2)
        except OSError:
            pass
        opened.sock.close()
        if opened.kept:
            if end_kept and opened.place is not None:
                keptdriver.retire(opened.pid, opened.place)
            return
        if opened.child is not None and opened.child.poll() is None:
            opened.child.kill()
            opened.child.wait()
        opened.log.unlink(missing_ok=True)


def _tidy(line: str) -> str:
    """A Ray log line without its "[timestamp E pid tid] file.cc:N:" prefix."""
    if line.startswith("[") and "] " in line:
        line = line.split("] ", 1)[1]
        head, _, rest = line.partition(": ")
        if rest and (head.endswith((".h", ".cc")) or ".cc:" in head or ".h:" in head):
            line = rest
    return line.strip()[:300]


def _settle(fut: Future, msg: dict[str, Any]) -> None:
    if fut.done():
        return
    if "error" in msg:
        fut.set_exception(RemoteError(msg["error"], msg.get("kinds") or []))
    else:
        fut.set_result(msg.get("ok"))


_heads: dict[str, _Head] = {}
_heads_lock = threading.Lock()


def _head(address: str) -> _Head:
    with _heads_lock:
        if address not in _heads:
            _heads[address] = _Head(address)
        return _heads[address]


def probe(address: str, timeout: float = PROBE_S) -> str | None:
    """Why the GCS at "host:port" cannot be reached by TCP, or None (cluster/keptdriver.probe_gcs)."""
    return keptdriver.probe_gcs(address, timeout)[0]


def connect(address: str, timeout: float | None = None) -> _Link:
    """A driver of `address` reached or started, and connected (its ray.init done), within the deadline. A
    token the GCS refuses is said at once (Ray's ray.init retries it 20 times, ~20 s, and says "Failed to
    connect"), and the driver that holds it ended."""
    head = _head(address)
    wait = CONNECT_S if timeout is None else timeout
    deadline = time.monotonic() + wait
    link = head.ensure(deadline)
    while True:
        try:
            link.ready.result(timeout=0.25)
            return link
        except FutureTimeout:
            refused = head.token_refused()
            if refused:
                head.stop(end_kept=True)
                raise ClusterError(connect_error(address, refused)) from None
            if time.monotonic() > deadline:
                head.mark_down(f"ray.init did not connect within {wait:g}s")
                raise HeadUnreachable(head.down_text() or "head unreachable") from None
        except RemoteError as exc:
            raise ClusterError(connect_error(address, head.token_refused() or str(exc))) from None


def connect_error(address: str, text: str) -> str:
    """ray.init's failure said for an operator: a token problem named as such."""
    low = text.lower()
    if "token" in low or "authenticat" in low:
        given = os.environ.get("RAY_AUTH_TOKEN_PATH") or ("RAY_AUTH_TOKEN" if os.environ.get("RAY_AUTH_TOKEN") else "")
        what = f"the token in {given}" if given else "no token (RAY_AUTH_TOKEN_PATH, RAY_AUTH_TOKEN unset)"
        return (f"the Ray cluster at {address} refused {what}: {text.splitlines()[-1][:200]}; set RAY_AUTH_MODE=token "
                "and RAY_AUTH_TOKEN_PATH to the cluster's token file")
    return f"cannot reach the Ray cluster at {address}: {text.splitlines()[-1][:300] if text else 'no reason given'}"


def call(address: str, op: str, timeout: float | None = None, *, gcs: bool = False, **args: Any) -> Any:
    """Ask the driver; at most `timeout` seconds (CALL_S by default) after it is connected. `gcs`: the answer
    comes from the GCS alone, so no answer means the head is unreachable (not a slow node)."""
    head = _head(address)
    wait = CALL_S if timeout is None else timeout
    for attempt in (1, 2):
        link = connect(address)
        rid = next(link.ids)
        fut: Future = Future()  # its own each time: the ended driver's reader may fail the first one
        link.pending[rid] = fut
        try:
            with head.lock:
                link.send({"id": rid, "op": op, "timeout": wait, "args": args})
            break
        except OSError:  # it ended (a kept driver stopped or replaced), or stopped reading (SO_SNDTIMEO)
            link.pending.pop(rid, None)
            if head.link is link:
                head.stop()
            if attempt == 2 or head.down_since is not None:
                raise HeadUnreachable(head.down_text() or "the Ray driver ended") from None
            # the question never left: asked once more, of a driver reached or started afresh
    try:
        value = fut.result(timeout=wait + 0.5)
    except FutureTimeout:
        link.pending.pop(rid, None)
        if gcs:
            head.mark_down(f"the GCS did not answer within {wait:g}s")
            raise HeadUnreachable(head.down_text() or "head unreachable") from None
        raise RemoteError(f"no answer within {wait:g}s", ["GetTimeoutError", "DeadlineExceeded"]) from None
    if gcs:
        head.mark_up()
    return value


def head_down(address: str) -> str | None:
    """"head unreachable since HH:MM:SS (why)" while the head of `address` is known unreachable, else None."""
    head = _heads.get(address)
    return head.down_text() if head is not None else None


def check_head(address: str) -> str | None:
    """head_down, or, when a call failed without saying why, a probe of the GCS port now: a port that does
    not answer makes the head known down from now ("head unreachable since HH:MM:SS: why")."""
    if (down := head_down(address)) is not None:
        return down
    if (why := probe(address)) is None:
        return None
    head = _head(address)
    head.mark_down(why)
    return head.down_text()


def shutdown() -> None:
    """Close this process's driver connections: its own driver children end, kept drivers stay (tests; the
    console's exit closes them anyway)."""
    for head in list(_heads.values()):
        head.stop()
    _heads.clear()
