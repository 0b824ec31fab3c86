"""`eagle-console …` as a process of its own, forked from a warm interpreter instead of started from nothing.

A CLI test needs what an operator's command is: a process with its own pid, its own stdin/stdout/stderr, the
environment and working directory given, an exit status (or the signal that ended it), and nothing it changes
(os.environ, a module's state, a signal handler) left behind. It does not need Python to start again and
import the package again for every call: ~80 ms of CPU each (the interpreter, site, ~190 modules), ~500 calls
a suite run (`acct(2)`, docs/performance.md).

So each test process starts one *zygote* the first time it runs a command: `python tests/clikit.py --zygote`,
a single-threaded interpreter that imports the CLI and every command's module, then waits. For each command it
is sent argv, env and cwd with the caller's three pipe ends (SCM_RIGHTS); it forks, and the child does what
`python -m eagle_console ARGV` would after its imports — fds 0-2 from the caller, no other descriptor, the
environment and working directory given, `eagle_console.cli.main(ARGV)` — and exits with its status, which the
zygote waits for and sends back. The child is forked from a process that never ran a command, so it starts
with no state a fresh process would not have; only the imports are done.

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
_one_at_a_time = threading.Lock()  # the zygote serves one command at a time (a test may call from a thread)


def run(argv: Sequence[object], *, env: Mapping[str, str] | None = None, cwd: str | Path | None = None,
        timeout: float = 120) -> subprocess.CompletedProcess[str]:
    """What `subprocess.run([python, "-m", "eagle_console", *argv], capture_output=True, text=True,
    stdin=DEVNULL, …)` returns. TimeoutExpired (the command SIGKILLed) past `timeout`."""
    args = [str(a) for a in argv]
    request = json.dumps({"argv": args, "env": dict(os.environ if env is None else env),
                          "cwd": str(cwd if cwd is not None else os.getcwd())}).encode()
    with _one_at_a_time:
        return _run(args, request, timeout)


def _run(args: list[str], request: bytes, timeout: float) -> subprocess.CompletedProcess[str]:
    out_r, out_w = os.pipe()
    err_r, err_w = os.pipe()
    in_r = os.open(os.devnull, os.O_RDONLY)
    _, sock = _started()
    try:
        socket.send_fds(sock, [_HEADER.pack(len(request)) + request], [in_r, out_w, err_w])
    finally:
        for fd in (in_r, out_w, err_w):
            os.close(fd)
    deadline = time.monotonic() + timeout
    pid = int(_reply(sock, deadline)["pid"])
    try:
        out, err, late = _collect(out_r, err_r, deadline)
    finally:
        os.close(out_r)
        os.close(err_r)
    if late:
        os.kill(pid, signal.SIGKILL)
    status = int(_reply(sock, None)["status"])
    if late:
        raise subprocess.TimeoutExpired(["eagle-console", *args], timeout, out, err)
    return subprocess.CompletedProcess([sys.executable, "-m", "eagle_console", *args],
                                       os.waitstatus_to_exitcode(status), out.decode(errors="replace"),
                                       err.decode(errors="replace"))


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


def _reply(sock: socket.socket, deadline: float | None) -> dict:
    line = b""
    while not line.endswith(b"\n"):
        sock.settimeout(None if deadline is None else max(0.01, deadline - time.monotonic()))
        try:
            data = sock.recv(1)
        except TimeoutError as exc:
            raise RuntimeError("the CLI zygote (tests/clikit.py) did not answer") from exc
        if not data:
            raise RuntimeError("the CLI zygote (tests/clikit.py) ended")
        line += data
    return json.loads(line)


def _collect(out_r: int, err_r: int, deadline: float) -> tuple[bytes, bytes, bool]:
    """Both pipes read to their end (the command and whatever it left holding them exited), or the deadline."""
    chunks: dict[int, list[bytes]] = {out_r: [], err_r: []}
    with selectors.DefaultSelector() as sel:
        for fd in chunks:
            sel.register(fd, selectors.EVENT_READ)
        while sel.get_map():
            left = deadline - time.monotonic()
            if left <= 0:
                return b"".join(chunks[out_r]), b"".join(chunks[err_r]), True
            for key, _ in sel.select(left):
                data = os.read(key.fd, 65536)
                if data:
                    chunks[key.fd].append(data)
                else:
                    sel.unregister(key.fd)
    return b"".join(chunks[out_r]), b"".join(chunks[err_r]), False


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
    while True:
        head, fds, _, _ = socket.recv_fds(sock, _HEADER.size, 3)
        if not head:
            return
        while len(head) < _HEADER.size:
            head += sock.recv(_HEADER.size - len(head))
        (size,) = _HEADER.unpack(head)
        body = b""
        while len(body) < size:
            body += sock.recv(size - len(body))
        request = json.loads(body)
        pid = os.fork()
        if pid == 0:
            sock.close()
            _child(request, fds)
        for f in fds:
            os.close(f)
        sock.sendall(json.dumps({"pid": pid}).encode() + b"\n")
        _, status = os.waitpid(pid, 0)
        sock.sendall(json.dumps({"status": status}).encode() + b"\n")


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
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except Exception:  # noqa: BLE001 - a closed pipe: nothing more to say
                pass
        os._exit(code if isinstance(code, int) else 0 if code is None else 1)


if __name__ == "__main__" and sys.argv[1:2] == ["--zygote"]:
    _serve(int(sys.argv[2]))
