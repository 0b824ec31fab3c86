"""Log lines of the simulated SGLang server, in SGLang's and NCCL's real formats.

SGLang: `[%Y-%m-%d %H:%M:%S{.ms}{prefix}] message`, prefix ` TP{rank}` for scheduler lines when tp > 1, the
`.ms` only with SGLANG_LOG_MS=1 (srt/utils/common.py configure_logger); `Decode batch [N],` with
SGLANG_LOG_FORWARD_ITERS=1 (scheduler_metrics_mixin.py); the weight-loading bar in SGLang's text bar_format
(model_loader/weight_utils.py) with tqdm's own rate rules; the running-phase SIGQUIT line.
NCCL (2.28, the H200 fixture's version): `{host}:{pid}:{tid} [{cudaDev}] NCCL INFO {msg}`, device ids as
nvmlDev numbers (`R[D]`), SHM channels without a connIndex (`Channel 00 : ... via SHM/direct/direct`).
"""

from __future__ import annotations

import json
import os
import socket
import sys
import time
from collections.abc import Mapping

NCCL_VERSION = "2.28.9+cuda13.0"
CUDA_DRIVER_VERSION = 13000
# PCIe bus ids of the 8 cards (busId as NCCL prints it: hex, no 0x). Pairs (0,1) (2,3) (4,5) (6,7) share a
# PCIe switch (PXB): NCCL >= 2.23 uses P2P there by default and SHM across the host bridge (PHB).
BUS_IDS = ("18000", "1a000", "3a000", "3c000", "9a000", "9c000", "ba000", "bc000")
NCCL_ENV_VARS = ("NCCL_P2P_DISABLE", "NCCL_P2P_LEVEL", "NCCL_PROTO", "NCCL_ALGO", "NCCL_SHM_DISABLE",
                 "NCCL_IB_DISABLE", "NCCL_CUMEM_ENABLE", "NCCL_MIN_NCHANNELS", "NCCL_MAX_NCHANNELS",
                 "NCCL_BUFFSIZE", "NCCL_NVLS_ENABLE")


_TRUE = ("1", "true")
DECODE_LOG_INTERVAL = 40  # --decode-log-interval default: forwards between two `Decode batch` lines
_forward_ct = 0


def stamp() -> str:
    now = time.time()
    base = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(now))
    if os.environ.get("SGLANG_LOG_MS", "").lower() in _TRUE:  # `.%(msecs)03d`
        return f"{base}.{int(now * 1000) % 1000:03d}"
    return base


def _with_forward_iter(message: str) -> str:
    """SGLANG_LOG_FORWARD_ITERS=1: `Decode batch [forward_ct], ...` / `Prefill batch [forward_ct + 1], ...`."""
    global _forward_ct
    if os.environ.get("SGLANG_LOG_FORWARD_ITERS", "").lower() not in _TRUE:
        return message
    for head, step in (("Decode batch, ", DECODE_LOG_INTERVAL), ("Prefill batch, ", 1)):
        if message.startswith(head):
            _forward_ct += step
            return f"{head[:-2]} [{_forward_ct}], {message[len(head):]}"
    return message


def emit(line: str) -> None:
    sys.stdout.write(line + "\n")
    sys.stdout.flush()


def sglang_line(message: str, tp_rank: int | None = None, tp_size: int = 1) -> str:
    prefix = f" TP{tp_rank}" if tp_rank is not None and tp_size > 1 else ""
    return f"[{stamp()}{prefix}] {_with_forward_iter(message)}"


def child_failed_line(running: bool) -> str:
    """What the launcher logs when a child dies: engine.py's launch-phase handler, or the running-phase one
    (tokenizer_manager.py running_phase_sigquit_handler, f"SIGQUIT received. {signum=}, {frame=}. ...")."""
    if running:
        return sglang_line("SIGQUIT received. signum=None, frame=None. It usually means one child failed.")
    return sglang_line("Received sigquit from a child process. It usually means the child failed.")


def _clock(seconds: float) -> str:
    """tqdm's format_interval: `MM:SS`, `H:MM:SS` past an hour."""
    minutes, secs = divmod(int(seconds), 60)
    hours, minutes = divmod(minutes, 60)
    return f"{hours:d}:{minutes:02d}:{secs:02d}" if hours else f"{minutes:02d}:{secs:02d}"


def load_bar(done: int, total: int, elapsed: float, desc: str = "Loading safetensors checkpoint shards") -> str:
    """One update of SGLang's weight-loading bar, as tqdm prints BAR_FORMAT
    `{desc}: {percentage:3.0f}% Completed | {n_fmt}/{total_fmt} [{elapsed}<{remaining}, {rate_fmt}]`:
    `?` before the first shard, `s/it` once an item takes more than a second (tqdm's rate_inv_fmt)."""
    rate = done / elapsed if done and elapsed > 0 else 0.0
    if rate:
        remaining = _clock((total - done) / rate)
        rate_fmt = f"{1 / rate:5.2f}s/it" if 1 / rate > 1 else f"{rate:5.2f}it/s"
    else:
        remaining, rate_fmt = "?", "?it/s"
    return (f"{desc}: {100 * done / total:3.0f}% Completed | {done}/{total} "
            f"[{_clock(elapsed)}<{remaining}, {rate_fmt}]")


def uvicorn_line(message: str) -> str:
    return f"[{stamp()}] INFO:     {message}"


def host_name() -> str:
    # NCCL: gethostname() cut at the first '.', '%' and '/' replaced by '-'. A simulated node made with a
    # host name (node.json "hostname", several sim nodes on one machine) goes by that one instead.
    name = sim_host_name() or socket.gethostname()
    return name.split(".")[0].replace("%", "-").replace("/", "-") or "localhost"


def sim_host_name() -> str | None:
    sim = os.environ.get("EAGLE_CONSOLE_SIM")
    if not sim:
        return None
    try:
        with open(os.path.join(sim, "node.json")) as f:
            name = json.load(f).get("hostname")
    except (OSError, ValueError, AttributeError):
        return None
    return name if isinstance(name, str) and name else None


def same_switch(a: int, b: int) -> bool:
    return a // 2 == b // 2


def transport(src_dev: int, dst_dev: int, env: Mapping[str, str]) -> str:
    """The channel transport NCCL picks between two GPUs of this PCIe node, honouring the env overrides."""
    p2p_level = env.get("NCCL_P2P_LEVEL", "").upper()
    p2p_off = env.get("NCCL_P2P_DISABLE") == "1" or p2p_level in ("LOC", "0")
    shm_off = env.get("NCCL_SHM_DISABLE") == "1"
    p2p_ok = not p2p_off and (same_switch(src_dev, dst_dev) or p2p_level in ("PHB", "SYS", "3", "4", "5"))
    if p2p_ok:
        return "P2P/CUMEM" if env.get("NCCL_CUMEM_ENABLE", "0") == "1" else "P2P/IPC"
    if not shm_off:
        return "SHM/direct/direct"
    return "NET/Socket/0"


def nccl_lines(rank: int, nranks: int, devs: list[int], env: Mapping[str, str], comm: str,
               comm_id: str, nnodes: int = 1) -> list[str]:
    """What one rank's NCCL prints at NCCL_DEBUG=INFO while initialising an nranks communicator.

    `devs`: the GPU of each local rank on this node; with `nnodes` > 1 the ranks are split evenly over the
    nodes (rank // local ranks is the node) and a ring edge between two nodes goes over NET/Socket, logged
    `[send]` by its sender and `[receive]` by its receiver, as net.cc prints them."""
    local = nranks // nnodes
    dev = devs[rank % local]
    node = rank // local
    head = f"{host_name()}:{os.getpid()}:{os.getpid()} [{dev}] NCCL INFO "
    bus = BUS_IDS[dev % len(BUS_IDS)]
    out = [
        "ENV/Plugin: Could not find: libnccl-env.so",
        f"cudaDriverVersion {CUDA_DRIVER_VERSION}",
        f"NCCL version {NCCL_VERSION}",
        "Comm config Blocking set to 1",
    ]
    out += [f"{name} set by environment to {env[name]}" for name in NCCL_ENV_VARS if name in env]
    out += [
        "NET/Plugin: Could not find: libnccl-net.so",
        "NET/IB : No device found.",
        "Failed to initialize NET plugin IB",
        f"NET/Socket : Using [0]eth0:10.20.0.{11 + node}<0>",
        "Initialized NET plugin Socket",
        "Assigned NET plugin Socket to comm",
        "Using network Socket",
        f"ncclCommInitRankConfig comm {comm} rank {rank} nranks {nranks} cudaDev {dev} nvmlDev {dev} "
        f"busId {bus} commId {comm_id} - Init START",
    ]
    nxt, prv = (rank + 1) % nranks, (rank - 1) % nranks
    out.append(f"comm {comm} rank {rank} nRanks {nranks} nNodes {nnodes} localRanks {local} localRank {rank % local} "
               "MNNVL 0")
    nchannels = 2
    if rank == 0:
        ring = " ".join(str(r) for r in range(nranks))
        out += [f"Channel {c:02d}/{nchannels:02d} : {ring}" for c in range(nchannels)]
    out += [f"Ring {c:02d} : {prv} -> {rank} -> {nxt}" for c in range(nchannels)]
    tree_up = -1 if rank == 0 else rank - 1
    tree_down = nxt if nxt != 0 else -1
    out.append("Trees " + " ".join(f"[{c}] {tree_down}/-1/-1->{rank}->{tree_up}" for c in range(nchannels)))
    out.append("P2P Chunksize set to 131072")
    if nranks > 1:
        nxt_dev, prv_dev = devs[nxt % local], devs[prv % local]
        for c in range(nchannels):
            if prv // local != node:  # the ring enters this node here: the receiving end logs it too
                out.append(f"Channel {c:02d}/0 : {prv}[{prv_dev}] -> {rank}[{dev}] [receive] via NET/Socket/0")
            kind = transport(dev, nxt_dev, env) if nxt // local == node else "NET/Socket/0"
            conn = f"{rank}[{dev}] -> {nxt}[{nxt_dev}]"
            if kind.startswith("SHM"):
                out.append(f"Channel {c:02d} : {conn} via {kind}")
            elif kind.startswith("NET"):
                out.append(f"Channel {c:02d}/0 : {conn} [send] via {kind}")
            else:
                out.append(f"Channel {c:02d}/0 : {conn} via {kind}")
    out += [
        "Connected all rings, use ring PXN 0 GDR 0",
        "Connected all trees",
        f"{nchannels} coll channels, {nchannels} collnet channels, 0 nvls channels, {nchannels} p2p channels, "
        "2 p2p channels per peer",
        "CC Off, workFifoBytes 1048576",
        f"ncclCommInitRankConfig comm {comm} rank {rank} nranks {nranks} cudaDev {dev} nvmlDev {dev} "
        f"busId {bus} commId {comm_id} - Init COMPLETE",
        f"Init timings - ncclCommInitRankConfig: rank {rank} nranks {nranks} total 0.61 (kernels 0.38, "
        "alloc 0.02, bootstrap 0.06, allgathers 0.01, topo 0.05, graphs 0.01, connections 0.07, rest 0.01)",
    ]
    return [head + m for m in out]


def nccl_wanted(env: Mapping[str, str]) -> str:
    """How much NCCL prints: 'info' (INFO lines), 'version' (the bare version line) or 'none'.

    The simulated node runs with NCCL_DEBUG=INFO unless told otherwise, so the log has something to read.
    """
    level = env.get("NCCL_DEBUG", "INFO").upper()
    if level in ("INFO", "TRACE"):
        return "info"
    if level in ("VERSION", "WARN"):
        return "version"
    return "none"
