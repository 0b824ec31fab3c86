"""The console's and the CLI's link to the cluster: an out-of-process Ray driver asked with deadlines.

`call(address, op, timeout, **args)` asks the driver process of `address` (cluster/driver.py, started on
first use, one per address and process) and waits at most `timeout` seconds. No Ray import here: Ray's
client cannot end this process, block it, or write on its terminal. The head's state is kept per address:
a call the GCS did not answer, a refused or silent GCS port, or the driver process ended by Ray, make the
head *unreachable since* that moment (`head_down`), and the next calls say so at once instead of waiting
again — the driver is restarted at most every RETRY_S, after a TCP probe of the GCS port answered.

Deadlines (seconds), from the environment so tests need not wait Ray's own minute:
  EAGLE_CONSOLE_RAY_CONNECT_S  starting the driver and its ray.init (default 20)
  EAGLE_CONSOLE_RAY_CALL_S     a question to the GCS or the Jobs API (default 10)
  EAGLE_CONSOLE_RAY_RETRY_S    how long a head found unreachable is not asked again (default 5)
"""

from __future__ import annotations

import itertools
import json
import os
import socket
import subprocess
import sys
import tempfile
import threading
import time
from concurrent.futures import Future
from concurrent.futures import TimeoutError as FutureTimeout
from pathlib import Path
from typing import Any


def _env_s(name: str, default: float) -> float:
    try:
        return max(0.1, float(os.environ.get(name, "")))
    except ValueError:
        return default


CONNECT_S = _env_s("EAGLE_CONSOLE_RAY_CONNECT_S", 20.0)
CALL_S = _env_s("EAGLE_CONSOLE_RAY_CALL_S", 10.0)
RETRY_S = _env_s("EAGLE_CONSOLE_RAY_RETRY_S", 5.0)
PROBE_S = 1.0  # a TCP connect to the GCS port: refused at once when it is dead, silent when the link is cut


class ClusterError(Exception):
    """The cluster cannot be reached or did not answer (no head at the address, Ray not installed, a deadline)."""


class HeadUnreachable(ClusterError):
    """The head (its GCS) does not answer: said with since when."""


class RemoteError(ClusterError):
    """What Ray raised in the driver, with its class names (`kinds`): a dead actor, a timeout on the node."""

    def __init__(self, message: str, kinds: list[str]) -> None:
        super().__init__(message)
        self.kinds = kinds

    def is_a(self, name: str) -> bool:
        return name in self.kinds


class _Head:
    """One address's driver process and what is known of its head."""

    def __init__(self, address: str) -> None:
        self.address = address
        self.proc: subprocess.Popen | None = None
        self.log: Path | None = None
        self.ready: Future = Future()
        self.pending: dict[int, Future] = {}
        self.ids = itertools.count(1)
        self.lock = threading.Lock()
        self.down_since: float | None = None
        self.why = ""
        self.started_at = 0.0
        self.checked_at = 0.0  # when the head, known down, was last probed

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

    # -- the driver process ---------------------------------------------------------------------------------

    def _alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def ensure(self) -> None:
        """A driver process for this address, started if there is none; raises at once if the head is known
        unreachable and RETRY_S has not passed, or a probe of its GCS port fails."""
        self.gate()
        with self.lock:
            if self._alive():
                return
            if self.down_since is None or time.monotonic() - self.started_at >= RETRY_S:
                pass  # a first start, or a restart after RETRY_S
            else:
                raise HeadUnreachable(self.down_text() or "head unreachable")
            self.started_at = time.monotonic()
            why = probe(self.address)
            if why:
                self.mark_down(why)
                raise HeadUnreachable(self.down_text() or why)
            self._start()

    def _start(self) -> None:
        from eagle_console.pyenv import own_process_env

        fd, name = tempfile.mkstemp(prefix="eagle-console-ray-driver-", suffix=".log")  # 0600
        self.log = Path(name)
        self.ready = Future()
        with os.fdopen(fd, "wb") as err:
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "eagle_console.cluster.driver", self.address], stdin=subprocess.PIPE,
                stdout=subprocess.PIPE, stderr=err, env=own_process_env(os.environ),
                start_new_session=True)  # the terminal's Ctrl+C is the console's, not Ray's
        threading.Thread(target=self._read, args=(self.proc,), daemon=True, name="ray-driver-answers").start()

    def _read(self, proc: subprocess.Popen) -> None:
        assert proc.stdout is not None
        for raw in proc.stdout:
            try:
                msg = json.loads(raw)
            except ValueError:
                continue
            if msg.get("id") == 0:
                _settle(self.ready, msg)
            else:
                fut = self.pending.pop(msg.get("id"), None)
                if fut is not None:
                    _settle(fut, msg)
        proc.wait()
        why = self.death_reason(proc)
        if self.ready.done() and self.ready.exception() is None:  # it was connected: Ray ended it
            self.mark_down(why)
        err = HeadUnreachable(self.down_text() or why) if self.down_since else ClusterError(why)
        _settle(self.ready, {"error": why, "kinds": ["DriverExited"]})
        for fut in list(self.pending.values()):
            if not fut.done():
                fut.set_exception(err)
        self.pending.clear()

    def death_reason(self, proc: subprocess.Popen) -> str:
        """Why the driver process ended, from Ray's last error line in its log."""
        text = ""
        if self.log is not None:
            try:
                text = self.log.read_text(errors="replace")[-20000:]
            except OSError:
                pass
        for marker in ("Failed to connect to GCS", "uthentication", "Unauthenticated", "UNAUTHENTICATED"):
            for line in reversed(text.splitlines()):
                if marker in line:
                    return f"the Ray driver ended: {_tidy(line)}"
        return f"the Ray driver ended (exit {proc.returncode})"

    def token_refused(self) -> str | None:
        """The GCS's refusal of our token, from the driver's log (Ray 2.60: gcs_client.cc "Failed to get
        cluster ID from GCS server: Unauthenticated: ... InvalidAuthToken")."""
        if self.log is None:
            return None
        try:
            text = self.log.read_text(errors="replace")[:20000]
        except OSError:
            return None
        for line in text.splitlines():
            if "InvalidAuthToken" in line or "Unauthenticated" in line:
                return _tidy(line)
        return None

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        if self.log is not None:
            self.log.unlink(missing_ok=True)


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
    """Why the GCS at "host:port" cannot be reached by TCP, or None. (Ray's own connect retries a refused
    port for minutes: 20 × ~41 s in ray.init.) Addresses Ray resolves itself ("auto", ray://) are not probed."""
    host, _, port = address.rpartition(":")
    if not host or not port.isdigit() or "://" in address:
        return None
    try:
        with socket.create_connection((host, int(port)), timeout=timeout):
            return None
    except ConnectionRefusedError:
        return f"nothing listens at {address}: connection refused"
    except TimeoutError:
        return f"no answer from {address} within {timeout:g}s (the network, or the host is down)"
    except OSError as exc:
        return f"cannot reach {address}: {exc.strerror or exc}"


def connect(address: str, timeout: float | None = None) -> None:
    """The driver of `address` started and connected (its ray.init done) within the deadline. A token the
    GCS refuses is said at once (Ray's ray.init retries it 20 times, ~20 s, and says "Failed to connect")."""
    head = _head(address)
    head.ensure()
    wait = CONNECT_S if timeout is None else timeout
    deadline = time.monotonic() + wait
    while True:
        try:
            head.ready.result(timeout=0.25)
            return
        except FutureTimeout:
            refused = head.token_refused()
            if refused:
                head.stop()
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
    connect(address)
    wait = CALL_S if timeout is None else timeout
    rid = next(head.ids)
    fut: Future = Future()
    head.pending[rid] = fut
    line = json.dumps({"id": rid, "op": op, "timeout": wait, "args": args}) + "\n"
    try:
        assert head.proc is not None and head.proc.stdin is not None
        with head.lock:
            head.proc.stdin.write(line.encode())
            head.proc.stdin.flush()
    except (OSError, ValueError, AssertionError):
        head.pending.pop(rid, None)
        raise HeadUnreachable(head.down_text() or "the Ray driver ended") from None
    try:
        value = fut.result(timeout=wait + 0.5)
    except FutureTimeout:
        head.pending.pop(rid, None)
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


def shutdown() -> None:
    """Stop every driver process of this process (tests; the console's exit closes their stdin anyway)."""
    for head in list(_heads.values()):
        head.stop()
    _heads.clear()
