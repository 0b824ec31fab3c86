"""The simulated server's child processes: one scheduler per TP rank, and the detokenizer.

They are started as `sglang::scheduler_TP{N} -m eagle_console.sim.sglang_server --role scheduler ...`
(argv[0] is the title, as `setproctitle` would show it; /proc/PID/comm is set too). A scheduler logs its
NCCL init, weight loading, KV cache and CUDA graph capture, registers its GPU memory in the sim node,
tells the launcher it is ready through a pipe, then idles. Like SGLang's, it does not die with its
launcher: after a SIGKILL of the launcher it stays behind, reparented, still holding its memory.
"""

from __future__ import annotations

import ctypes
import os
import signal
import sys
import time
from pathlib import Path

from eagle_console.sim import server_logs as logs
from eagle_console.sim.server_config import (
    DEFAULT_MEM_FRACTION,
    DRAFT_WEIGHTS_GIB,
    K25_WEIGHTS_GIB_TP8,
    ServerConfig,
    draft_class,
    draft_context_error,
    startup_seconds,
    visible_devices,
)

GIB_MIB = 1024.0
CUDA_GRAPH_GIB = 0.42
KV_BYTES_PER_TOKEN = 61 * (512 + 64) * 2  # K2.5's MLA cache: 61 layers x (kv_lora_rank + rope dim), bf16
PR_SET_NAME = 15


def scheduler_title(tp_rank: int, tp_size: int) -> str:
    return f"sglang::scheduler_TP{tp_rank}" if tp_size > 1 else "sglang::scheduler"


def set_comm_name(title: str) -> None:
    """Set /proc/self/comm (15 bytes), the part of a title `ps -o comm` and psutil's name() show."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(PR_SET_NAME, ctypes.c_char_p(title.encode()[:15]), 0, 0, 0)
    except (OSError, AttributeError):
        pass


def _gpu_total_gib(sim_dir: Path | None) -> float:
    if sim_dir is not None:
        try:
            from eagle_console.sim.gpustate import node_gpus

            return node_gpus(sim_dir)[0]["memory_total_mib"] / GIB_MIB
        except (OSError, ValueError, KeyError, IndexError):
            pass
    from eagle_console.sim.gpustate import GPU_MEMORY_MIB

    return GPU_MEMORY_MIB / GIB_MIB


def _weights_gib(cfg: ServerConfig) -> float:
    total = os.environ.get("EAGLE_SIM_WEIGHTS_GIB")
    try:
        total_gib = float(total) if total else K25_WEIGHTS_GIB_TP8 * 8
    except ValueError:
        total_gib = K25_WEIGHTS_GIB_TP8 * 8
    return total_gib / cfg.tp_size


def _tqdm(desc: str, done: int, total: int, elapsed: float) -> str:
    pct = int(100 * done / total)
    rate = done / elapsed if elapsed > 0 else 0.0
    left = (total - done) / rate if rate > 0 else 0.0
    return (f"{desc}: {pct:3d}% Completed | {done}/{total} [{int(elapsed) // 60:02d}:{int(elapsed) % 60:02d}"
            f"<{int(left) // 60:02d}:{int(left) % 60:02d}, {rate:5.2f}it/s]")


# The tail of the traceback a draft ModelConfig error gives (sglang srt/managers/scheduler.py →
# speculative/eagle_worker.py → configs/model_config.py `_derive_context_length`).
DRAFT_CONFIG_FRAMES = (
    '  File "/usr/local/lib/python3.12/dist-packages/sglang/srt/managers/scheduler.py", line 2836, in '
    'run_scheduler_process',
    "    scheduler = Scheduler(",
    '  File "/usr/local/lib/python3.12/dist-packages/sglang/srt/speculative/eagle_worker.py", line 111, in __init__',
    "    super().__init__(",
    '  File "/usr/local/lib/python3.12/dist-packages/sglang/srt/configs/model_config.py", line 235, in '
    '_derive_context_length',
    "    raise ValueError(",
)


def run_scheduler(cfg: ServerConfig, tp_rank: int, ready_fd: int, comm: str, comm_id: str) -> int:
    title = scheduler_title(tp_rank, cfg.tp_size)
    set_comm_name(title)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C goes to the launcher, which stops us
    sim = os.environ.get("EAGLE_CONSOLE_SIM")
    sim_dir = Path(sim) if sim else None
    devs = visible_devices(cfg.tp_per_node)  # this node's GPUs: tp_rank % tp_per_node picks one
    if len(devs) < cfg.tp_per_node:
        logs.emit(logs.sglang_line(f"RuntimeError: CUDA error: invalid device ordinal (tp_rank={tp_rank})",
                                   tp_rank, cfg.tp_size))
        return 1
    gpu = devs[tp_rank % cfg.tp_per_node]
    budget = startup_seconds()

    def say(msg: str) -> None:
        logs.emit(logs.sglang_line(msg, tp_rank, cfg.tp_size))

    env = dict(os.environ)
    # SGLang turns cuMem off for NCCL unless symmetric memory is enabled (engine._set_envs_and_config).
    env.setdefault("NCCL_CUMEM_ENABLE", "0")
    say(f"Init torch distributed begin. tp_rank={tp_rank}")
    time.sleep(budget * 0.10)
    nccl = logs.nccl_wanted(env)
    if nccl == "info":
        for line in logs.nccl_lines(tp_rank, cfg.tp_size, devs[:cfg.tp_per_node], env, comm, comm_id,
                                    cfg.nnodes):
            logs.emit(line)
    elif nccl == "version":
        logs.emit(f"NCCL version {logs.NCCL_VERSION}")
    total = _gpu_total_gib(sim_dir)
    avail = total - 1.02  # CUDA context and NCCL buffers
    say(f"Init torch distributed ends. mem usage={total - avail:.2f} GB")
    say(f"Load weight begin. avail mem={avail:.2f} GB")
    shards = 64
    t0 = time.monotonic()
    for i in (0, 16, 32, 48, 64):
        time.sleep(budget * 0.40 / 5)
        if tp_rank == 0:
            logs.emit(logs.load_bar(i, shards, time.monotonic() - t0))
    weights = _weights_gib(cfg)
    fraction = cfg.mem_fraction_static or DEFAULT_MEM_FRACTION
    static = fraction * total
    if weights + (DRAFT_WEIGHTS_GIB if cfg.speculative else 0) >= static:
        say("RuntimeError: Not enough memory. Please try to increase --mem-fraction-static.")
        return 1
    held = {gpu: weights * GIB_MIB}
    if sim_dir is not None:
        from eagle_console.sim.gpustate import hold

        hold(sim_dir, held)
    avail -= weights
    # 0.5.23's form (model_executor/model_runner.py:1373): elapsed and the class, no dtype
    say(f"Load weight end. elapsed={budget * 0.40:.2f} s, type=KimiK25ForConditionalGeneration, "
        f"avail mem={avail:.2f} GB, mem usage={weights:.2f} GB.")
    if cfg.speculative:
        time.sleep(budget * 0.05)
        allow = os.environ.get("SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN", "").lower() in ("1", "true")
        error, warnings = draft_context_error(cfg, allow)
        for w in warnings:
            say(w)
        if error is not None:  # raised in the draft worker's ModelConfig, as SGLang's scheduler reports it
            # One log record, one write, as SGLang's `logger.error(f"Scheduler hit an exception: {traceback}")`
            # (managers/scheduler.py, run_scheduler_process): eight schedulers failing at once never interleave
            # inside a traceback there; line-by-line writes here did, under load, and cut the tracebacks.
            record = [logs.sglang_line("Scheduler hit an exception: Traceback (most recent call last):", tp_rank,
                                       cfg.tp_size), *DRAFT_CONFIG_FRAMES, f"ValueError: {error}"]
            logs.emit("\n".join(record))
            return 1
        say(f"Load weight begin. avail mem={avail:.2f} GB")
        avail -= DRAFT_WEIGHTS_GIB
        held[gpu] += DRAFT_WEIGHTS_GIB * GIB_MIB
        if sim_dir is not None:
            hold(sim_dir, held)
        say(f"Load weight end. elapsed={budget * 0.05:.2f} s, type={draft_class(cfg)}, avail mem={avail:.2f} GB, "
            f"mem usage={DRAFT_WEIGHTS_GIB:.2f} GB.")
    kv = static - weights - (DRAFT_WEIGHTS_GIB if cfg.speculative else 0)
    tokens = int(kv * 2**30 / KV_BYTES_PER_TOKEN)
    time.sleep(budget * 0.10)
    held[gpu] += kv * GIB_MIB
    if sim_dir is not None:
        hold(sim_dir, held)
    avail -= kv
    # SGLang 0.5.23's lines: mem_cache/memory_pool.py:2096, kv_cache_configurator.py:499,
    # model_runner_components/cuda_graph_setup.py:758-792 (capture_decode_graph; "verify" with speculation)
    say(f"KV Cache is allocated. dtype: torch.bfloat16, #tokens: {tokens}, KV size: {kv:.2f} GB")
    say(f"Memory pool end. avail mem={avail:.2f} GB")
    if cfg.decode_graph:
        name = "target verify" if cfg.speculative else "target decode"
        per_req = cfg.num_draft_tokens if cfg.speculative else 1
        say(f"Capture {name} CUDA graph begin. backend=full, num_tokens_per_req={per_req}, avail mem={avail:.2f} GB")
        bs = [1, 2, 4, 8, 12, 16, 24, 32]
        t0 = time.monotonic()
        for n, b in enumerate(reversed(bs), 1):
            time.sleep(budget * 0.20 / len(bs))
            if tp_rank == 0:
                logs.emit(f"Capturing batches (bs={b} avail_mem={avail:.2f} GB): "
                          + _tqdm("", n, len(bs), time.monotonic() - t0).split(": ", 1)[1])
        held[gpu] += CUDA_GRAPH_GIB * GIB_MIB
        if sim_dir is not None:
            hold(sim_dir, held)
        avail -= CUDA_GRAPH_GIB
        say(f"Capture {name} CUDA graph end. bs={bs}, elapsed={time.monotonic() - t0:.2f} s, "
            f"mem usage={CUDA_GRAPH_GIB:.2f} GB, avail mem={avail:.2f} GB.")
    context = cfg.context_length or 262144
    say(f"max_total_num_tokens={tokens}, chunked_prefill_size=8192, max_prefill_tokens=16384, "
        f"max_running_requests=48, context_len={context}, available_gpu_mem={avail:.2f} GB")
    os.write(ready_fd, b"ready\n")
    os.close(ready_fd)
    while True:
        signal.pause()


def run_detokenizer() -> int:
    set_comm_name("sglang::detokenizer")
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    while True:
        signal.pause()
