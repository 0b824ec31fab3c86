"""`eagle-console …` as a process of its own, forked from a warm interpreter instead of started from nothing.

A CLI test needs what an operator's command is: a process with its own pid, its own stdin/stdout/stderr, the
environment and working directory given, an exit status (or the signal that ended it), and nothing it changes
(os.environ, a module's state, a signal handler) left behind. It does not need Python to start again and
import the package again for every call: ~100 ms of CPU each (the interpreter, site, ~190 modules), 528 calls
in a suite run (`acct(2)`, docs/performance.md).

So each test process starts one *zygote* the first time it runs a command: `python tests/clikit.py --zygote`,
a single-threaded interpreter that imports the CLI and every command's module, then waits. For each command it
is sent argv, env and cwd with the caller's three pipe ends (SCM_RIGHTS); it forks, and the child does what
`python -m eagle_console ARGV` would after its imports — fds 0-2 from the caller, no other descriptor, the
environment and working directory given, `eagle_console.cli.main(ARGV)`, then what the interpreter does at
exit (threads, atexit, flush) — and exits with its status, which the zygote reports by pid (commands may run
side by side). The child is forked from a process that never ran a command, so it starts with no state a
fresh process would not have; only the imports are done.

What it is not: a fresh interpreter. A test of what a fresh `eagle-console` process imports or how it starts
(`test_core_imports`, `test_cli_start_imports`), of its command line as `ps` shows it, of the entry point
itself, or of the cluster (`cluster/link.py` reads its settings from the environment at import) keeps
`subprocess` with `sys.executable -m eagle_console`.
"""

from __future__ import annotations

import atexit
import io
import json
import os
import selectors
import signal
import socket
import struct
import subprocess
import sys
import threading
import time
from collections.abc import Mapping, Sequence
from pathlib import Path

_HEADER = struct.Struct("!I")
# Imported by the zygote before it forks: what most commands load (the command modules come with the parser).
_WARM = ("eagle_console.plan.loader", "eagle_console.journal", "eagle_console.ops.steps", "eagle_console.node.procs",
         "eagle_console.node.gpus", "eagle_console.engine.runner")
# Read from the environment at import: a child forked after importing it would see the zygote's values.
_NOT_WARM = ("eagle_console.cluster.link",)
_zygote: tuple[subprocess.Popen, socket.socket] | None = None
_talk = threading.Lock()  # one request or reply on the zygote's socket at a time (tests call from threads)
_ended: dict[int, int] = {}  # pid -> wait status, as the zygote reports them (in any order)


class Command:
    """A command started by `start`: `subprocess.Popen(…, stdout=PIPE, stderr=PIPE or STDOUT, text=True)`
    for what the tests ask of one (pid, communicate, wait, returncode)."""

    def __init__(self, args: list[str], pid: int, out_r: int, err_r: int | None, zygote: socket.socket) -> None:
        self.args = [sys.executable, "-m", "eagle_console", *args]
        self.pid = pid
        self._zygote = zygote  # the one that reports this pid's end (a later one, after it died, never would)
        self.returncode: int | None = None
        self._pipes = (out_r, err_r)

    def communicate(self, timeout: float | None = None) -> tuple[str, str | None]:
        """Both pipes read to their end, then the exit status; past `timeout` the command is SIGKILLed
        and TimeoutExpired raised (its output so far attached)."""
        deadline = None if timeout is None else time.monotonic() + timeout
        out_r, err_r = self._pipes
        try:
            out, err, late = _collect(out_r, err_r, deadline)
        finally:
            for fd in self._pipes:
                if fd is not None:
                    os.close(fd)
        if late:
            os.kill(self.pid, signal.SIGKILL)
            self.wait()
            raise subprocess.TimeoutExpired(self.args, timeout or 0, out, err)
        self.wait()
        return out.decode(errors="replace"), None if err_r is None else err.decode(errors="replace")

    def wait(self, timeout: float | None = None) -> int:
        if self.returncode is None:
            status = _status_of(self.pid, self._zygote, None if timeout is None else time.monotonic() + timeout)
            if status is None:
                raise subprocess.TimeoutExpired(self.args, timeout or 0)
            self.returncode = os.waitstatus_to_exitcode(status)
        return self.returncode


def start(argv: Sequence[object], *, env: Mapping[str, str] | None = None, cwd: str | Path | None = None,
          stderr_to_stdout: bool = False) -> Command:
    """`eagle-console ARGV` started, stdin /dev/null, stdout and stderr pipes (or stderr into stdout)."""
    args = [str(a) for a in argv]
    request = json.dumps({"argv": args, "env": dict(os.environ if env is None else env),
                          "cwd": str(cwd if cwd is not None else os.getcwd())}).encode()
    out_r, out_w = os.pipe()
    err_r, err_w = (None, out_w) if stderr_to_stdout else os.pipe()
    in_r = os.open(os.devnull, os.O_RDONLY)
    try:
        with _talk:
            _, sock = _started()
            socket.send_fds(sock, [_HEADER.pack(len(request)) + request], [in_r, out_w, err_w])
            while True:  # the answer to this request; ends of earlier commands may come first
                message = _message(sock, time.monotonic() + 60)
                if "started" in message:
                    break
                _ended[message["ended"]] = message["status"]
    finally:
        for fd in {in_r, out_w, err_w}:
            os.close(fd)
    return Command(args, int(message["started"]), out_r, err_r, sock)


def run(argv: Sequence[object], *, env: Mapping[str, str] | None = None, cwd: str | Path | None = None,
        timeout: float = 120) -> subprocess.CompletedProcess[str]:
    """What `subprocess.run([python, "-m", "eagle_console", *argv], capture_output=True, text=True,
    stdin=DEVNULL, …)` returns. TimeoutExpired (the command SIGKILLed) past `timeout`."""
    command = start(argv, env=env, cwd=cwd)
    out, err = command.communicate(timeout=timeout)
    return subprocess.CompletedProcess(command.args, command.returncode, out, err)


def _status_of(pid: int, sock: socket.socket, deadline: float | None) -> int | None:
    while True:
        with _talk:
            if pid in _ended:
                return _ended.pop(pid)
            if deadline is not None and time.monotonic() >= deadline:
                return None
            message = _message(sock, deadline, quiet=True)  # its end, or "the CLI zygote ended"
            if message is not None:
                _ended[message["ended"]] = message["status"]


def _started() -> tuple[subprocess.Popen, socket.socket]:
    global _zygote
    if _zygote is None or _zygote[0].poll() is not None:
        mine, theirs = socket.socketpair()
        proc = subprocess.Popen([sys.executable, __file__, "--zygote", str(theirs.fileno())],
                                pass_fds=[theirs.fileno()], stdin=subprocess.DEVNULL)
        theirs.close()
        _zygote = (proc, mine)
        atexit.register(_stop, proc, mine)
    return _zygote


def _stop(proc: subprocess.Popen, sock: socket.socket) -> None:
    sock.close()  # the zygote reads EOF and exits
    try:
        proc.wait(timeout=5)
    except subprocess.TimeoutExpired:
        proc.kill()


_pending: dict[socket.socket, bytearray] = {}  # what each zygote sent past its last whole line


def _message(sock: socket.socket, deadline: float | None, quiet: bool = False) -> dict | None:
    """The zygote's next line; None if `quiet` and nothing came by the deadline (a short wait: others may
    be waiting on the socket too)."""
    pending = _pending.setdefault(sock, bytearray())
    while b"\n" not in pending:
        left = None if deadline is None else deadline - time.monotonic()
        if quiet:
            left = 0.05 if left is None else min(0.05, left)
        sock.settimeout(None if left is None else max(0.001, left))
        try:
            data = sock.recv(4096)
        except TimeoutError:
            if quiet:
                return None
            raise RuntimeError("the CLI zygote (tests/clikit.py) did not answer") from None
        if not data:
            raise RuntimeError("the CLI zygote (tests/clikit.py) ended")
        pending.extend(data)
    line, _, rest = bytes(pending).partition(b"\n")
    pending[:] = rest
    return json.loads(line)


def _collect(out_r: int, err_r: int | None, deadline: float | None) -> tuple[bytes, bytes, bool]:
    """Both pipes read to their end (the command and whatever it left holding them exited), or the deadline."""
    chunks: dict[int, list[bytes]] = {fd: [] for fd in (out_r, err_r) if fd is not None}
    err = (lambda: b"".join(chunks[err_r])) if err_r is not None else (lambda: b"")
    with selectors.DefaultSelector() as sel:
        for fd in chunks:
            sel.register(fd, selectors.EVENT_READ)
        while sel.get_map():
            left = None if deadline is None else deadline - time.monotonic()
            if left is not None and left <= 0:
                return b"".join(chunks[out_r]), err(), True
            for key, _ in sel.select(left):
                data = os.read(key.fd, 65536)
                if data:
                    chunks[key.fd].append(data)
                else:
                    sel.unregister(key.fd)
    return b"".join(chunks[out_r]), err(), False


# -- the zygote ------------------------------------------------------------------------------------------------

def _serve(fd: int) -> None:
    import ctypes
    import importlib

    ctypes.CDLL(None).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG: gone with the test process
    sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != Path(__file__).resolve().parent]
    from eagle_console.cli import build_parser

    build_parser()  # every command's module
    for name in _WARM:
        importlib.import_module(name)
    assert not any(name in sys.modules for name in _NOT_WARM), _NOT_WARM
    sock = socket.socket(fileno=fd)
    wake_r, wake_w = os.pipe()
    for end in (wake_r, wake_w):
        os.set_blocking(end, False)
    signal.set_wakeup_fd(wake_w)  # a child's end wakes the loop below
    signal.signal(signal.SIGCHLD, lambda *_: None)
    with selectors.DefaultSelector() as sel:
        sel.register(sock, selectors.EVENT_READ)
        sel.register(wake_r, selectors.EVENT_READ)
        while True:
            for key, _ in sel.select():
                if key.fd == wake_r:
                    while os.read(wake_r, 512) == 512:
                        pass
                elif not _fork_one(sock):
                    return
            while True:  # every child that ended, reported by pid
                try:
                    pid, status = os.waitpid(-1, os.WNOHANG)
                except ChildProcessError:
                    break
                if pid == 0:
                    break
                sock.sendall(json.dumps({"ended": pid, "status": status}).encode() + b"\n")


def _fork_one(sock: socket.socket) -> bool:
    """Read one request and fork its command; False once the test process closed the socket."""
    head, fds, _, _ = socket.recv_fds(sock, _HEADER.size, 3)
    if not head:
        return False
    while len(head) < _HEADER.size:
        head += sock.recv(_HEADER.size - len(head))
    (size,) = _HEADER.unpack(head)
    body = b""
    while len(body) < size:
        body += sock.recv(size - len(body))
    pid = os.fork()
    if pid == 0:
        signal.set_wakeup_fd(-1)
        signal.signal(signal.SIGCHLD, signal.SIG_DFL)
        _child(json.loads(body), fds)
    for f in fds:
        os.close(f)
    sock.sendall(json.dumps({"started": pid}).encode() + b"\n")
    return True


def _child(request: dict, fds: list[int]) -> None:
    code: object = 1
    try:
        for fd, target in zip(fds, (0, 1, 2), strict=True):
            os.dup2(fd, target)
        os.closerange(3, 65536)  # what close_fds does
        os.chdir(request["cwd"])
        os.environ.clear()
        os.environ.update(request["env"])
        sys.path[0:0] = [os.getcwd()]  # `python -m` puts the working directory first
        # the interpreter's own streams for these fds: stdout block-buffered on a pipe (PYTHONUNBUFFERED: not),
        # stderr line-buffered with backslashreplace
        unbuffered = bool(os.environ.get("PYTHONUNBUFFERED"))
        sys.stdin = io.TextIOWrapper(open(0, "rb", closefd=False), encoding="utf-8")  # noqa: SIM115
        sys.stdout = io.TextIOWrapper(open(1, "wb", buffering=0 if unbuffered else -1, closefd=False),  # noqa: SIM115
                                      encoding="utf-8", write_through=unbuffered, line_buffering=os.isatty(1))
        sys.stderr = io.TextIOWrapper(open(2, "wb", buffering=0 if unbuffered else -1, closefd=False),  # noqa: SIM115
                                      encoding="utf-8", errors="backslashreplace", line_buffering=True)
        import eagle_console
        from eagle_console.cli import main

        sys.argv = [str(Path(eagle_console.__file__).parent / "__main__.py"), *request["argv"]]
        try:
            code = main(request["argv"])
        except SystemExit as exc:
            code = exc.code
        except BaseException:  # noqa: BLE001 - what the interpreter prints for an uncaught exception
            import traceback

            traceback.print_exc()
            code = 1
        if code is not None and not isinstance(code, int):  # SystemExit("text"): said, status 1
            print(code, file=sys.stderr)
            code = 1
    finally:
        # what the interpreter does at exit, in its order: wait for non-daemon threads, run the atexit
        # callbacks (`demo --nodes` stops its Ray cluster from one), flush the streams
        for last in (threading._shutdown, atexit._run_exitfuncs, sys.stdout.flush, sys.stderr.flush):
            try:
                last()
            except Exception:  # noqa: BLE001 - a closed pipe, a callback that failed: as at a real exit
                pass
        os._exit(code if isinstance(code, int) else 0 if code is None else 1)


if __name__ == "__main__" and sys.argv[1:2] == ["--zygote"]:
    _serve(int(sys.argv[2]))
