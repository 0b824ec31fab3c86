"""The simulated server's multi-node rendezvous: `--nnodes N --node-rank i --dist-init-addr HOST:PORT`.

As with SGLang (torch.distributed's TCP store at `tcp://HOST:PORT`), rank 0 listens on the dist-init
address and every other node connects to it; nothing goes on until all N have joined. Here it is a real
TCP socket carrying three lines: `join I` (rank I arrives), `comm ID` (rank 0 hands out the NCCL
communicator id every node's schedulers log), `ready` (rank I's schedulers are up). Rank 0 serves HTTP once
every node is ready; a node of rank > 0 serves nothing. When a rank > 0 dies, rank 0 keeps running and
answering /health, as SGLang's does (sglang#3099); when rank 0 goes, the others fail as NCCL's would.
"""

from __future__ import annotations

import socket
import time
from collections.abc import Callable
from typing import Protocol

from eagle_console.sim import server_logs as logs
from eagle_console.sim.server_config import ServerConfig, split_addr

POLL_S = 0.2


class Launcher(Protocol):
    """What a peer rank asks of its server's launcher (sim/sglang_server.py's Launcher, which imports this)."""

    stopping: bool

    def start_children(self, comm_id: str | None = None, detokenizer: bool = True) -> list[int]: ...
    def wait_ready(self, fds: list[int]) -> bool: ...
    def stop_children(self) -> None: ...
    def child_failed(self) -> object | None: ...


def _lines(sock: socket.socket, stopped: Callable[[], bool]) -> str | None:
    """One line from `sock`, or None when it closed or `stopped()` became true."""
    buf = b""
    sock.settimeout(POLL_S)
    while not stopped():
        try:
            chunk = sock.recv(1)
        except TimeoutError:
            continue
        except OSError:
            return None
        if not chunk:
            return None
        if chunk == b"\n":
            return buf.decode(errors="replace")
        buf += chunk
    return None


class DistServer:
    """Rank 0's side: listens on the dist-init address and waits for the other nodes."""

    def __init__(self, addr: str, nnodes: int) -> None:
        host, port = split_addr(addr)
        self.nnodes = nnodes
        self.sock = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET)
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.sock.bind((host, port))  # OSError: the address is taken or not this machine's
        self.sock.listen(nnodes)
        self.sock.settimeout(POLL_S)
        self.peers: dict[int, socket.socket] = {}

    def wait_joined(self, comm_id: str, stopped: Callable[[], bool]) -> bool:
        while len(self.peers) < self.nnodes - 1:
            if stopped():
                return False
            try:
                conn, peer = self.sock.accept()
            except TimeoutError:
                continue
            line = _lines(conn, stopped) or ""
            if not line.startswith("join "):
                conn.close()
                continue
            rank = int(line.split()[1])
            conn.sendall(f"comm {comm_id}\n".encode())
            self.peers[rank] = conn
            logs.emit(logs.sglang_line(f"[simulated] node rank {rank} joined from {peer[0]} "
                                       f"({len(self.peers) + 1}/{self.nnodes} nodes)"))
        return True

    def wait_ready(self, stopped: Callable[[], bool]) -> bool:
        for rank, conn in sorted(self.peers.items()):
            if _lines(conn, stopped) != "ready":
                if not stopped():
                    logs.emit(logs.sglang_line(f"[simulated] node rank {rank} left before it was ready"))
                return False
        return True

    def close(self) -> None:
        for conn in self.peers.values():
            conn.close()
        self.sock.close()


class DistClient:
    """A node of rank > 0: connects to rank 0 (retrying, as torch's store client does) and reports."""

    def __init__(self, addr: str, node_rank: int) -> None:
        self.host, self.port = split_addr(addr)
        self.node_rank = node_rank
        self.sock: socket.socket | None = None

    def join(self, stopped: Callable[[], bool]) -> str | None:
        """Connect and join; the communicator id rank 0 handed out, or None when stopped first."""
        while not stopped():
            try:
                self.sock = socket.create_connection((self.host, self.port), timeout=1.0)
            except OSError:
                time.sleep(POLL_S)
                continue
            self.sock.sendall(f"join {self.node_rank}\n".encode())
            line = _lines(self.sock, stopped) or ""
            if line.startswith("comm "):
                return line.split()[1]
            self.sock.close()
            self.sock = None
        return None

    def ready(self) -> None:
        if self.sock is not None:
            self.sock.sendall(b"ready\n")

    def close(self) -> None:
        if self.sock is not None:
            self.sock.close()


def run_peer(cfg: ServerConfig, launcher: Launcher) -> int:
    """A node of rank > 0: join rank 0, start this node's schedulers, report ready, then wait.

    Stops (exit 0) on SIGTERM; fails (exit 1) when a scheduler dies or rank 0 goes away."""
    stopped = lambda: launcher.stopping  # noqa: E731
    client = DistClient(cfg.dist_init_addr or "", cfg.node_rank)
    logs.emit(logs.sglang_line(f"[simulated] node rank {cfg.node_rank}: joining {cfg.dist_init_addr}"))
    comm_id = client.join(stopped)
    if comm_id is None:
        return 0
    fds = launcher.start_children(comm_id, detokenizer=False)
    if not launcher.wait_ready(fds):
        client.close()
        launcher.stop_children()
        return 0 if launcher.stopping else 1
    client.ready()
    rank0_gone = False
    while not stopped():  # rank 0's socket watched in short reads, our schedulers between them
        if launcher.child_failed() is not None:
            break
        sock = client.sock
        if sock is None:
            break
        sock.settimeout(POLL_S)
        try:
            if sock.recv(1) == b"":
                rank0_gone = True
                break
        except TimeoutError:
            continue
        except OSError:
            rank0_gone = True
            break
    if rank0_gone and not stopped():
        logs.emit(logs.sglang_line("RuntimeError: [simulated] connection to rank 0 at "
                                   f"{cfg.dist_init_addr} lost (NCCL communicator aborted)"))
    failed = not stopped()
    client.close()
    launcher.stop_children()
    return 1 if failed else 0
