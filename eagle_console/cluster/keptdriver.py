"""Where the user's Ray driver lives, and how an asker finds it or starts it (the driver: cluster/driver.py).

A fresh `gpus --cluster` spent 0.44 s in `import ray` and more in `ray.init` before it could ask anything.
So the driver outlives the command that started it: one process per user and *connection*, serving a Unix
socket, which the next command (the CLI, the console) reaches in milliseconds. It ends after
EAGLE_CONSOLE_RAY_KEEP_S seconds without an asker (default 300; 0: no kept driver, each asker starts its
own child, which ends with it), or when it has lost its head (its GCS port refused, or silent for 90 s).

Its folder (`home()`): `$XDG_RUNTIME_DIR/eagle-console` — the per-user runtime dir sockets belong in: a
tmpfs, 0700, the user's, gone at logout — when that is set and the user's; else `$TMPDIR/eagle-console-UID`
(`/tmp`; sticky, so nobody else can rename it). Either is made 0700 and used only when it is a real
directory (not a symlink), owned by the user, with no access for anyone else; otherwise there is no kept
driver. Not the state dir under $HOME: a home on NFS is shared by hosts, and a socket or a lock there would
be one host's.

One driver per connection *key*: a hash of the address, this install (interpreter, package), the
environment that changes Ray's connection (every RAY_* variable: RAY_AUTH_MODE, RAY_AUTH_TOKEN(_PATH), TLS;
the proxies the Jobs API's HTTP uses; PYTHONPATH) and the token file's content. So another token, or the same
path with a new token in it, is another driver; the token itself goes only into the hash, and the driver
gets it as its asker had it, by its environment, never its argv (docs/security.md).

Files, per key: `ray-KEY.sock` (0600), `ray-KEY.log` (the driver's stderr: Ray's warnings, why it exited),
`ray-KEY.lock` (held by the live driver all its life; only the holder binds or removes the socket, so a
stale socket is removed safely and two askers starting at once get one driver).
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import hashlib
import json
import os
import signal
import socket
import stat
import struct
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import IO

from eagle_console.processes import DEAD, proc_state

PROTOCOL = 2  # the JSON lines over the socket (cluster/driver.py); another version is another driver
DRIVER_MODULE = "eagle_console.cluster.driver"
PROBE_S = 1.0  # a TCP connect to the GCS port: refused at once when it is dead, silent when the link is cut
SUN_PATH_MAX = 107  # sockaddr_un.sun_path, less its NUL
_UCRED = struct.Struct("3i")  # struct ucred: pid, uid, gid


def keep_s() -> float:
    """EAGLE_CONSOLE_RAY_KEEP_S: how long a driver with no asker stays (default 300; 0: no kept driver)."""
    try:
        return max(0.0, float(os.environ.get("EAGLE_CONSOLE_RAY_KEEP_S", "300")))
    except ValueError:
        return 300.0


# -- the folder and the key ----------------------------------------------------------------------------------


def _private(path: Path, uid: int) -> bool:
    """`path` is a directory (not a link) of `uid` that nobody else may enter; made so if missing."""
    try:
        path.mkdir(mode=0o700)
    except FileExistsError:
        pass
    except OSError:
        return False
    try:
        st = os.lstat(path)
    except OSError:
        return False
    if not stat.S_ISDIR(st.st_mode) or st.st_uid != uid:
        return False
    if stat.S_IMODE(st.st_mode) & 0o077:
        try:  # ours (a mkdir under another umask): closed again
            os.chmod(path, 0o700)
        except OSError:
            return False
    return True


def home() -> Path | None:
    """The user's private folder for kept drivers, or None (then nothing is kept)."""
    uid = os.getuid()
    runtime = os.environ.get("XDG_RUNTIME_DIR", "")
    if runtime and os.path.isabs(runtime):
        try:
            st = os.stat(runtime)
            if st.st_uid == uid and not stat.S_IMODE(st.st_mode) & 0o077 and _private(Path(runtime) / "eagle-console", uid):
                return Path(runtime) / "eagle-console"
        except OSError:
            pass  # set but absent (another host's, a `sudo -E`): the fallback
    fallback = Path(tempfile.gettempdir()) / f"eagle-console-{uid}"
    return fallback if _private(fallback, uid) else None


def _token_file(env: dict[str, str]) -> bytes:
    path = env.get("RAY_AUTH_TOKEN_PATH") or os.path.join(env.get("HOME") or os.path.expanduser("~"), ".ray", "auth_token")
    try:
        with open(path, "rb") as f:
            return f.read(65536)
    except OSError:
        return b""


def key(address: str, env: dict[str, str]) -> str:
    """The connection's key: drivers are shared only by askers that would connect the same way."""
    from eagle_console.pyenv import package_root

    conn_env = sorted((k, v) for k, v in env.items()
                      if k.startswith("RAY_") or k.lower().endswith("_proxy") or k in ("PYTHONPATH", "PYTHONHOME"))
    ident = json.dumps([PROTOCOL, address, sys.executable, str(package_root()), conn_env]).encode()
    return hashlib.sha256(ident + b"\0" + _token_file(env)).hexdigest()[:20]


@dataclass(frozen=True)
class Place:
    """A kept driver's files."""

    sock: Path
    log: Path
    lock: Path

    @classmethod
    def of(cls, folder: Path, k: str) -> Place:
        return cls(folder / f"ray-{k}.sock", folder / f"ray-{k}.log", folder / f"ray-{k}.lock")


def place_for(address: str, env: dict[str, str] | None = None) -> Place | None:
    """Where the kept driver of `address` for this environment lives; None when none can be kept here."""
    folder = home()
    if folder is None:
        return None
    place = Place.of(folder, key(address, dict(os.environ if env is None else env)))
    return place if len(os.fsencode(place.sock)) <= SUN_PATH_MAX else None


# -- the head's GCS port ---------------------------------------------------------------------------------------


def probe_gcs(address: str, timeout: float = PROBE_S) -> tuple[str | None, bool]:
    """(why the GCS at "host:port" cannot be reached by TCP, or None; whether it *refused*: nothing listens,
    the GCS is gone, as opposed to silent: the link or the host). Ray's own connect retries a refused port
    for minutes (20 × ~41 s in ray.init). Addresses Ray resolves itself ("auto", ray://) are not probed."""
    host, _, port = address.rpartition(":")
    if not host or not port.isdigit() or "://" in address:
        return None, False
    try:
        with socket.create_connection((host, int(port)), timeout=timeout):
            return None, False
    except ConnectionRefusedError:
        return f"nothing listens at {address}: connection refused", True
    except TimeoutError:
        return f"no answer from {address} within {timeout:g}s (the network, or the host is down)", False
    except OSError as exc:
        return f"cannot reach {address}: {exc.strerror or exc}", False


# -- peers ---------------------------------------------------------------------------------------------------


def peer(sock: socket.socket) -> tuple[int, int, int]:
    """(pid, uid, gid) of the process at the other end of a Unix socket, as the kernel saw it connect."""
    return _UCRED.unpack(sock.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, _UCRED.size))


def send_timeout(sock: socket.socket, seconds: float) -> None:
    """A send that cannot go through within `seconds` fails instead of blocking (a stopped peer)."""
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDTIMEO, struct.pack("ll", int(seconds), int(seconds % 1 * 1e6)))


def is_driver(pid: int, sock_path: Path | None = None) -> bool:
    """`pid` runs our driver module as this user (for that socket, when given)."""
    try:
        if os.stat(f"/proc/{pid}").st_uid != os.getuid():
            return False
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            argv = f.read().split(b"\0")
    except OSError:
        return False
    return DRIVER_MODULE.encode() in argv and (sock_path is None or os.fsencode(sock_path) in argv)


def end(pid: int, sock_path: Path | None, sig: int = signal.SIGKILL) -> bool:
    """Signal the driver `pid`, checked to be ours first (through a pidfd: a reused pid is not hit)."""
    try:
        fd = os.pidfd_open(pid)
    except OSError:
        return False
    try:
        if not is_driver(pid, sock_path):
            return False
        signal.pidfd_send_signal(fd, sig)
        return True
    except OSError:
        return False
    finally:
        os.close(fd)


def claim(lock: Path) -> int | None:
    """The lock of a kept driver's key (an open fd: held until closed or this process ends); None when
    another process holds it."""
    fd = os.open(lock, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        return None
    return fd


def retire(pid: int, place: Place) -> None:
    """End a kept driver that cannot serve (its token refused, mid-`ray.init`: no handler of ours runs there,
    so SIGKILL) and remove its socket, under its lock, as a driver would."""
    end(pid, place.sock)
    gone(pid, 2.0)
    fd = claim(place.lock)
    if fd is not None:
        with contextlib.suppress(FileNotFoundError):
            place.sock.unlink()
        os.close(fd)


def gone(pid: int, within: float) -> bool:
    """Wait up to `within` s for `pid` to end (a zombie counts as ended: its files are closed)."""
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        if proc_state(pid) in (None, *DEAD):
            return True
        time.sleep(0.02)
    return False


# -- the asker's side: a connection to a driver ----------------------------------------------------------------


class NoDriver(Exception):
    """No driver could be started or reached: why, from its log when it said."""


@dataclass
class Opened:
    """A connection to a driver: its socket, its line reader, the driver's pid and log, and whether it is a
    kept one (closing ours leaves it running) or our own child (it ends with us)."""

    sock: socket.socket
    lines: IO[bytes]
    pid: int
    log: Path
    kept: bool
    place: Place | None = None  # a kept driver's files
    child: subprocess.Popen | None = None
    first: bytes = b""  # the driver's first line, read when the connection was made


def _spawn(argv: list[str], stderr: int, **kw) -> subprocess.Popen:
    from eagle_console.pyenv import own_process_env

    # its own session: the terminal's Ctrl+C and hang-up are the asker's, not Ray's
    return subprocess.Popen([sys.executable, "-m", DRIVER_MODULE, *argv], stdin=subprocess.DEVNULL,
                            stdout=subprocess.DEVNULL, stderr=stderr, env=own_process_env(os.environ),
                            start_new_session=True, **kw)


def open_child(address: str) -> Opened:
    """A driver of our own (EAGLE_CONSOLE_RAY_KEEP_S=0, or no private folder): a child on one end of a socket
    pair, which ends when we close it or exit."""
    ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
    fd, name = tempfile.mkstemp(prefix="eagle-console-ray-driver-", suffix=".log")  # 0600
    try:
        with os.fdopen(fd, "wb") as err:
            child = _spawn([address, "--fd", str(theirs.fileno())], err, pass_fds=(theirs.fileno(),))
    finally:
        theirs.close()
    return Opened(ours, ours.makefile("rb"), child.pid, Path(name), kept=False, child=child)


def _connect(path: Path) -> socket.socket | None:
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        s.connect(os.fspath(path))
        return s
    except OSError as exc:
        s.close()
        if exc.errno in (errno.ENOENT, errno.ECONNREFUSED, errno.ENOTSOCK):
            return None  # none yet, or a dead one's socket
        raise NoDriver(f"cannot reach the kept Ray driver at {path}: {exc.strerror or exc}") from None


def _first_line(s: socket.socket, timeout: float) -> tuple[IO[bytes], bytes] | None:
    """The driver's first line within `timeout` (it says it at once, even while still connecting), or None."""
    s.settimeout(max(0.05, timeout))
    lines = s.makefile("rb")
    try:
        line = lines.readline()
    except OSError:
        return None
    if not line:
        return None
    s.settimeout(None)
    return lines, line


def _start_kept(address: str, place: Place, keep: float) -> subprocess.Popen:
    err = os.open(place.log, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    try:
        child = _spawn([address, "--socket", os.fspath(place.sock), "--keep", f"{keep:g}"], err, cwd="/")
    finally:
        os.close(err)
    threading.Thread(target=child.wait, daemon=True, name="ray-driver-reaper").start()  # no zombie while we run
    return child


def _log_tail(path: Path) -> str:
    try:
        text = path.read_text(errors="replace")[-4000:]
    except OSError:
        return ""
    lines = [ln for ln in text.splitlines() if ln.strip()]
    return lines[-1][:300] if lines else ""


def open_kept(address: str, place: Place, keep: float, deadline: float, hello_s: float) -> Opened:
    """A connection to the kept driver of `place`, started if there is none.

    A driver that is there but does not say its first line within `hello_s` (stopped, wedged) is ended and
    replaced; one that closes at once (it was exiting, idle) is replaced. A driver we start may take until
    `deadline` (monotonic) to listen."""
    for _ in range(3):
        s = _connect(place.sock)
        started: subprocess.Popen | None = None
        next_start = 0.0
        while s is None:  # start one, and wait for it (or for the one that won the lock) to listen
            now = time.monotonic()
            code = None if started is None else started.poll()
            if code not in (None, 0):
                raise NoDriver(f"the Ray driver did not start (exit {code}): "
                               f"{_log_tail(place.log) or 'no reason in ' + str(place.log)}")
            if (started is None or code == 0) and now >= next_start:  # 0: another one holds the lock
                started, next_start = _start_kept(address, place, keep), now + 0.5
            if now > deadline:
                raise NoDriver(f"the Ray driver did not listen at {place.sock} in time")
            time.sleep(0.02)
            s = _connect(place.sock)
        pid = peer(s)[0]
        got = _first_line(s, hello_s if started is None else deadline - time.monotonic())
        if got is not None:
            send_timeout(s, 10.0)
            return Opened(s, got[0], pid, place.log, kept=True, place=place, child=started, first=got[1])
        s.close()
        if is_driver(pid, place.sock) and not gone(pid, 0.5):  # silent: stopped or wedged
            end(pid, place.sock)
            gone(pid, 2.0)  # its lock is free once it is
    raise NoDriver(f"the Ray driver at {place.sock} did not answer")


# -- every kept driver of this user (tests' cleanup, `python -m eagle_console.cluster.keptdriver`) ----------------


def kept_drivers(folder: Path | None = None) -> list[tuple[int, Path]]:
    """(pid, socket) of each live kept driver in the user's folder."""
    folder = folder or home()
    found = []
    for path in sorted(folder.glob("ray-*.sock")) if folder else []:
        s = _connect(path) if path.is_socket() else None
        if s is not None:
            with s:
                found.append((peer(s)[0], path))
    return found


def stop_kept(folder: Path | None = None, grace: float = 5.0) -> list[int]:
    """SIGTERM each kept driver (it removes its socket and exits), SIGKILL after `grace`; their pids."""
    drivers = kept_drivers(folder)
    for pid, path in drivers:
        end(pid, path, signal.SIGTERM)
    for pid, path in drivers:
        if not gone(pid, grace):
            end(pid, path)
            gone(pid, 2.0)
    return [pid for pid, _ in drivers]


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if args not in ([], ["list"], ["stop"]):
        print("usage: python -m eagle_console.cluster.keptdriver [list|stop]", file=sys.stderr)
        return 2
    folder = home()
    if args == ["stop"]:
        for pid in stop_kept(folder):
            print(f"stopped {pid}")
        return 0
    for pid, path in kept_drivers(folder):
        print(f"{pid}\t{path}\t{path.with_suffix('.log')}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
