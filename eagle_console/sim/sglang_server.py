r"""A simulated `python -m sglang.launch_server`: same flags, same process model, same logs and HTTP API.

    python -m eagle_console.sim.sglang_server --model-path M --tp-size 8 --port 30000 \
        --speculative-algorithm EAGLE3 --speculative-draft-model-path D ...

Flags are parsed as SGLang's argparse does (unknown flags refused, abbreviations accepted); a leading
`-m sglang.launch_server` is skipped, so `sglang.server` launches it with
`with.python = "python -m eagle_console.sim.sglang_server"`. The simulated node is EAGLE_CONSOLE_SIM
(unset: it serves, but registers no GPU memory). EAGLE_SIM_STARTUP_S sets the startup time (default 3 s).

Process model as SGLang's: this launcher (HTTP server + tokenizer) starts one scheduler per TP rank and a
detokenizer, all in its process group. SIGTERM/SIGINT stop the children, then the launcher. A SIGKILL of
the launcher leaves the schedulers running, reparented, still holding their GPU memory.
"""

from __future__ import annotations

import argparse
import os
import select
import signal
import socket
import subprocess
import sys
import threading
import time
import uuid
from pathlib import Path

from eagle_console.sim import server_logs as logs
from eagle_console.sim.server_config import ServerConfig, parse_server_args, startup_seconds, visible_devices
from eagle_console.sim.server_workers import run_detokenizer, run_scheduler, scheduler_title

VERSION = "0.5.6"
MODULE = "eagle_console.sim.sglang_server"


def _child_env() -> dict[str, str]:
    # argv[0] is the process title, so the child cannot find its venv from it: hand it our import path.
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in sys.path if p)
    return env


class Launcher:
    def __init__(self, cfg: ServerConfig, argv: list[str]) -> None:
        self.cfg = cfg
        self.argv = argv
        self.children: list[subprocess.Popen] = []
        self.stopping = False
        sim = os.environ.get("EAGLE_CONSOLE_SIM")
        self.sim_dir = Path(sim) if sim else None

    def _spawn(self, title: str, extra: list[str], pass_fds: tuple[int, ...] = ()) -> subprocess.Popen:
        return subprocess.Popen([title, "-m", MODULE, *extra, *self.argv], executable=sys.executable,
                                env=_child_env(), pass_fds=pass_fds, stdin=subprocess.DEVNULL)

    def start_children(self, comm_id: str | None = None, detokenizer: bool = True) -> list[int]:
        """Start this node's schedulers (and the detokenizer); returns the read ends of their ready pipes."""
        comm_id = comm_id or new_comm_id()
        ready_fds = []
        for rank in self.cfg.local_tp_ranks:
            r, w = os.pipe()
            comm = f"0x{0x55d0a000 + rank * 0x1000:x}"
            self.children.append(self._spawn(
                scheduler_title(rank, self.cfg.tp_size),
                ["--role", "scheduler", "--tp-rank", str(rank), "--ready-fd", str(w), "--comm", comm,
                 "--comm-id", comm_id], (w,)))
            os.close(w)
            ready_fds.append(r)
        if detokenizer:  # a node of rank > 0 runs no tokenizer or detokenizer (engine.py)
            self.children.append(self._spawn("sglang::detokenizer", ["--role", "detokenizer"]))
        return ready_fds

    def wait_ready(self, fds: list[int]) -> bool:
        pending = set(fds)
        while pending:
            if self.stopping or any(c.poll() is not None for c in self.children):
                return False
            ready, _, _ = select.select(list(pending), [], [], 0.2)
            for fd in ready:
                data = os.read(fd, 64)
                if not data and self.stopping:
                    return False
                os.close(fd)
                pending.discard(fd)
                if b"ready" not in data:
                    return False
        return True

    def stop_children(self) -> None:
        for c in self.children:
            if c.poll() is None:
                try:
                    c.send_signal(signal.SIGTERM)
                except ProcessLookupError:
                    pass
        deadline = time.monotonic() + 5
        for c in self.children:
            try:
                c.wait(timeout=max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                c.kill()
                c.wait()

    def child_failed(self) -> subprocess.Popen | None:
        for c in self.children:
            rc = c.poll()
            # -SIGTERM: the whole group was told to stop, not a failure of the child
            if rc is not None and rc != -signal.SIGTERM:
                return c
        return None


def new_comm_id() -> str:
    return f"0x{uuid.uuid4().int & (2**64 - 1):016x}"


def port_free(host: str, port: int) -> None:
    """OSError when host:port cannot be bound (SGLang checks the port before it starts anything)."""
    with socket.socket() as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        s.bind((host, port))


def _announce(cfg: ServerConfig) -> None:
    # SGLang 0.5.23 logs the resolved record as a dict (entrypoints/engine.py:311 `server_args={...}`,
    # ServerArgs.resolved_dict), with its per-phase CUDA-graph fields (arg_groups/field_order.py:227-228).
    logs.emit(logs.sglang_line(f"server_args={cfg.as_server_args()!r}"))
    if cfg.ignored:
        logs.emit(logs.sglang_line(f"[simulated] flags with no effect here: {' '.join(cfg.ignored)}"))


def launch(cfg: ServerConfig, argv: list[str]) -> int:
    from eagle_console.sim.server_http import SimEngine, serve

    launcher = Launcher(cfg, argv)
    gpus = visible_devices(cfg.tp_size)[: cfg.tp_size]
    engine = SimEngine(cfg, launcher.sim_dir, gpus)
    stop = threading.Event()

    def on_signal(signum: int, _frame: object) -> None:
        launcher.stopping = True
        stop.set()

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    _announce(cfg)
    if cfg.nnodes > 1 and cfg.node_rank > 0:
        from eagle_console.sim.server_dist import run_peer

        return run_peer(cfg, launcher)
    try:  # fail at once on a taken port, but listen only once the schedulers are up, as SGLang does
        port_free(cfg.host, cfg.port)
    except OSError as exc:
        logs.emit(logs.sglang_line(f"ERROR: [Errno {exc.errno}] error while attempting to bind on address "
                                   f"('{cfg.host}', {cfg.port}): {exc.strerror}"))
        return 1
    dist, comm_id = None, None
    if cfg.nnodes > 1:
        from eagle_console.sim.server_dist import DistServer

        try:
            dist = DistServer(cfg.dist_init_addr or "", cfg.nnodes)
        except OSError as exc:
            logs.emit(logs.sglang_line(f"RuntimeError: The server socket has failed to listen on "
                                       f"{cfg.dist_init_addr} (errno: {exc.errno} - {exc.strerror})."))
            return 1
        comm_id = new_comm_id()
        if not dist.wait_joined(comm_id, lambda: launcher.stopping):
            dist.close()
            return 0
    fds = launcher.start_children(comm_id)
    ok = launcher.wait_ready(fds) and (dist is None or dist.wait_ready(lambda: launcher.stopping))
    if not ok:
        if not launcher.stopping:
            logs.emit(logs.child_failed_line(running=False))
        launcher.stop_children()
        return 0 if launcher.stopping else 1
    try:
        httpd = serve(engine, cfg.as_server_args(), VERSION)
    except OSError as exc:
        logs.emit(logs.sglang_line(f"ERROR: [Errno {exc.errno}] error while attempting to bind on address "
                                   f"('{cfg.host}', {cfg.port}): {exc.strerror}"))
        launcher.stop_children()
        return 1
    logs.emit(logs.uvicorn_line(f"Started server process [{os.getpid()}]"))
    logs.emit(logs.uvicorn_line("Waiting for application startup."))
    logs.emit(logs.uvicorn_line("Application startup complete."))
    logs.emit(logs.uvicorn_line(f"Uvicorn running on http://{cfg.host}:{cfg.port} (Press CTRL+C to quit)"))
    if not cfg.skip_server_warmup:
        time.sleep(startup_seconds() * 0.05)
        logs.emit(logs.uvicorn_line(f'127.0.0.1:{40000 + os.getpid() % 20000} - "GET /get_model_info HTTP/1.1" 200 OK'))
        logs.emit(logs.sglang_line("Prefill batch, #new-seq: 1, #new-token: 7, #cached-token: 0, #token: 0, "
                                   "token usage: 0.00, #running-req: 0, #queue-req: 0, ", 0, cfg.tp_size))
        logs.emit(logs.uvicorn_line(f'127.0.0.1:{40001 + os.getpid() % 20000} - "POST /generate HTTP/1.1" 200 OK'))
    engine.ready = True
    logs.emit(logs.sglang_line("The server is fired up and ready to roll!"))
    failed = None
    while not stop.wait(0.25):
        failed = launcher.child_failed()
        if failed is not None:
            break
    engine.ready = False
    if failed is not None and not launcher.stopping:
        logs.emit(logs.child_failed_line(running=True))
    launcher.stop_children()
    httpd.shutdown()
    if launcher.sim_dir is not None:
        engine.running = 0
        engine._activity()
    return 1 if failed is not None and not launcher.stopping else 0


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if "-h" in argv or "--help" in argv:
        print(__doc__)
        return 0
    role = argparse.ArgumentParser(add_help=False, allow_abbrev=False)  # `--tp 8` is not `--tp-rank 8`
    role.add_argument("--role", choices=("launcher", "scheduler", "detokenizer"), default="launcher")
    role.add_argument("--tp-rank", type=int, default=0)
    role.add_argument("--ready-fd", type=int, default=-1)
    role.add_argument("--comm", default="0x55d0a000")
    role.add_argument("--comm-id", default="0x0")
    ns, server_argv = role.parse_known_args(argv)
    try:
        cfg = parse_server_args(server_argv)
    except ValueError as exc:
        print(f"sglang_server (simulated): bad arguments: {exc}", file=sys.stderr)
        return 2
    if ns.role == "scheduler":
        return run_scheduler(cfg, ns.tp_rank, ns.ready_fd, ns.comm, ns.comm_id)
    if ns.role == "detokenizer":
        return run_detokenizer()
    return launch(cfg, server_argv)


if __name__ == "__main__":
    sys.exit(main())
