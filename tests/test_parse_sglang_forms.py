"""SGLang server-log forms the parser used to miss: SGLANG_LOG_FORWARD_ITERS, SGLANG_LOG_MS, the running-phase
SIGQUIT, the detokenizer's exception, torch's NCCL watchdog / `NCCL error in:`, SCHEDULER_DIED's exit code and
the weight-loading bar. Every sample is a real line (source beside it) or the upstream format string filled in.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import clikit

from eagle_console.parse.sglang_log import SglangLogParser, parse_decode, split_prefix, summarize
from eagle_console.sim import server_logs as logs

ROOT = Path(__file__).parent.parent

# sgl-project/sglang, the test of `sglang.srt.debug_utils.log_parser` (TestLogParser.test_log_parser):
# SGLANG_LOG_FORWARD_ITERS=1 behind a Ray prefix with `ip=`.
FORWARD_ITERS = ("(SGLangEngine pid=35555) [2025-10-31 03:45:20 TP0] Decode batch [51341], #running-req: 317, "
                 "#token: 1094261, token usage: 0.67, cuda graph: True, gen throughput (token/s): 14806.57, "
                 "#queue-req: 0,")
# A PD-disaggregation decode log (a public repository's test fixture, in the code index): SGLANG_LOG_MS=1
# (`.%(msecs)03d`, configure_logger in srt/utils/common.py) plus forward iterations.
LOG_MS = ("[2026-09-24 01:50:43.001 DP0 TP0 EP0] Decode batch [40], #running-req: 1, #token: 532160, "
          "token usage: 0.19, accept len: 4.40, accept rate: 0.68, pre-allocated usage: 0.18, "
          "#prealloc-req: 0, #transfer-req: 22, #retracted-req: 0, cuda graph: True, "
          "gen throughput (token/s): 11.87, #queue-req: 0")
# scheduler_metrics_mixin.py@01bb3c80 log_prefill_stats: f"Prefill batch{iter_msg}, #new-seq: ..." with
# iter_msg = f" [{self.forward_ct + 1}]"; a real line from a public Ascend deployment note (code index).
PREFILL_ITERS = ("[2026-08-27 08:30:07] Prefill batch [10], #new-seq: 1, #new-token: 128, #cached-token: 0, "
                 "token usage: 0.00, #running-req: 0, #queue-req: 1, #pending-token: 0, npu graph: False, "
                 "input throughput (token/s): 2.66")
# tokenizer_manager.py@c60799d0 running_phase_sigquit_handler:
# f"SIGQUIT received. {signum=}, {frame=}. It usually means one child failed." — as real logs print it.
SIGQUIT = "[2026-03-04 13:10:13] SIGQUIT received. signum=None, frame=None. It usually means one child failed."
# detokenizer_manager.py run_detokenizer_process: logger.error(f"DetokenizerManager hit an exception: {traceback}")
DETOKENIZER = ["[2026-03-04 13:10:13] DetokenizerManager hit an exception: Traceback (most recent call last):",
               '  File "/sgl-workspace/sglang/python/sglang/srt/managers/detokenizer_manager.py", line 281, '
               "in run_detokenizer_process",
               "    manager.event_loop()",
               "KeyError: 'rid'"]
# torch ProcessGroupNCCL.cpp watchdog, real lines from a DeepSpeed run (code index; torch 2.5-era format).
WATCHDOG = [
    "[rank0]:[E1218 20:27:21.426415540 ProcessGroupNCCL.cpp:629] [Rank 0] Watchdog caught collective operation "
    "timeout: WorkNCCL(SeqNum=1, OpType=BROADCAST, NumelIn=131072000, NumelOut=131072000, Timeout(ms)=600000) "
    "ran for 600081 milliseconds before timing out.",
    "[rank0]:[E1218 20:27:21.484963240 ProcessGroupNCCL.cpp:681] [Rank 0] Some NCCL operations have failed or "
    "timed out. Due to the asynchronous nature of CUDA kernels, subsequent GPU operations might run on "
    "corrupted/incomplete data.",
]
# https://github.com/vllm-project/vllm/issues/10523 (title): torch's C10D_NCCL_CHECK, NCCLUtils.hpp
NCCL_ERROR = ("torch.distributed.DistBackendError: NCCL error in: ../torch/csrc/distributed/c10d/"
              "ProcessGroupNCCL.cpp:1333, unhandled system error (run with NCCL_DEBUG=INFO for details), "
              "NCCL version 2.18.1")
# engine.py: "Rank {i} scheduler died during initialization (exit code: {code}). If exit code is -9 (SIGKILL),
# a common cause is the OS OOM killer." — both codes as real runs printed them (code index).
DIED_9 = ("RuntimeError: Rank 0 scheduler died during initialization (exit code: -9). If exit code is -9 "
          "(SIGKILL), a common cause is the OS OOM killer.")
DIED_3 = "RuntimeError: Rank 0 scheduler died during initialization (exit code: -3)"
# https://github.com/sgl-project/sglang/pull/7181 (DeepSeek-V3, 163 shards; weight_utils.py BAR_FORMAT).
LOAD_BAR = ["Loading safetensors checkpoint shards:  74% Completed | 120/163 [00:37<00:12,  3.40it/s]",
            "Loading safetensors checkpoint shards:  74% Completed | 121/163 [00:37<00:12,  3.30it/s]"]
# https://github.com/vllm-project/vllm/pull/38476 (85 shards, the slow `s/it` form behind a Ray prefix).
LOAD_BAR_SLOW = "Loading safetensors checkpoint shards:  47% Completed | 40/85 [13:29<17:00, 22.68s/it]"


def codes(summary: dict) -> dict[str, str]:
    return {f["code"]: f["severity"] for f in summary["findings"]}


def test_forward_iters_decode_behind_ray_prefix() -> None:
    p = SglangLogParser()
    p.feed([FORWARD_ITERS])
    assert p.decode_samples == 1
    assert p.summary()["decode"] == {"gen_throughput": 14806.57, "accept_len": None, "running_req": 317,
                                     "token_usage": 0.67}
    assert p.decode.tp_rank == 0 and p.decode.forward_ct == 51341


def test_millisecond_timestamps_and_ep_rank() -> None:
    assert split_prefix(LOG_MS)[:2] == ("2026-09-24 01:50:43.001", "DP0 TP0 EP0")
    p = SglangLogParser()
    p.feed([LOG_MS])
    assert p.decode is not None and p.decode.accept_len == 4.4 and p.decode.tp_rank == 0
    assert p.decode.forward_ct == 40 and p.decode.gen_throughput == 11.87


def test_prefill_with_forward_iters() -> None:
    p = SglangLogParser()
    p.feed([PREFILL_ITERS])
    assert p.prefill_samples == 1 and p.prefill.new_token == 128 and p.prefill.queue_req == 1
    assert parse_decode(PREFILL_ITERS) is None


def test_running_phase_sigquit_is_child_failed() -> None:
    s = summarize([SIGQUIT])
    assert codes(s) == {"CHILD_FAILED": "error"} and s["errors"] == [SIGQUIT]


def test_detokenizer_exception() -> None:
    s = summarize(DETOKENIZER)
    assert codes(s) == {"SCHEDULER_EXCEPTION": "error"}
    assert s["errors"][0].startswith("DetokenizerManager hit an exception") and "KeyError" in s["errors"][0]


def test_torch_nccl_watchdog_timeout() -> None:
    s = summarize(WATCHDOG)
    found = {f["code"]: f for f in s["findings"]}
    assert set(found) == {"POSSIBLE_HANG"} and found["POSSIBLE_HANG"]["severity"] == "error"
    assert "OpType=BROADCAST" in found["POSSIBLE_HANG"]["message"] and "NCCL_P2P_DISABLE=1" in \
        found["POSSIBLE_HANG"]["message"]


def test_bare_nccl_error_line() -> None:
    s = summarize([NCCL_ERROR])
    assert codes(s) == {"NCCL_WARN": "error"} and s["errors"] == [NCCL_ERROR]


def test_scheduler_died_names_the_oom_killer_only_for_minus_nine() -> None:
    nine = summarize([DIED_9])["findings"][0]["message"]
    three = summarize([DIED_3])["findings"][0]["message"]
    assert "SIGKILL: usually the OS OOM killer" in nine
    assert "OOM" not in three and "exit code -3" in three


def test_weight_loading_bar_is_progress() -> None:
    s = summarize(["[2025-06-13 10:00:00 TP0] Load weight begin. avail mem=78.64 GB", *LOAD_BAR])
    assert s["load"] == {"done": 121, "total": 163, "pct": 74.2, "rate_s": 3.3, "eta_s": 12.0}
    assert s["errors"] == [] and [st["name"] for st in s["stages"]] == ["load weights begin"]
    slow = summarize(["(Worker_TP0_EP0 pid=1892) ", LOAD_BAR_SLOW])["load"]
    assert slow is not None and (slow["done"], slow["total"], slow["eta_s"]) == (40, 85, 1020.0)
    assert abs(slow["rate_s"] - 1 / 22.68) < 1e-9



def test_the_multi_thread_loading_bars_of_0523_are_progress() -> None:
    """0.5.23 loads with threads by default (model_loader/loader.py:613): its bars are "Multi-thread loading
    shards" and, for .bin/.pt files, "Multi-thread loading pt checkpoint shards" (weight_utils.py:1369-1373,
    :1438-1442), in common.py's BAR_FORMAT. Before: no load progress at all for a 0.5.23 server."""
    for desc in ("Multi-thread loading shards", "Multi-thread loading pt checkpoint shards"):
        line = f"{desc}:  45% Completed | 29/64 [00:10<00:12,  2.90it/s]"
        load = summarize(["[2026-12-01 10:00:00 TP0] Load weight begin. avail mem=94.10 GB", line])["load"]
        assert load is not None and (load["done"], load["total"]) == (29, 64), (desc, load)

def test_cli_server_log_json_has_load(tmp_path: Path) -> None:
    log = tmp_path / "server.log"
    log.write_text("\n".join([*LOAD_BAR, FORWARD_ITERS]) + "\n", encoding="utf-8")
    out = clikit.run(["server-log", "--json", log], cwd=ROOT, timeout=60)
    doc = json.loads(out.stdout)
    assert out.returncode == 0 and doc["load"]["done"] == 121 and doc["decode_samples"] == 1
    text = clikit.run(["server-log", log], cwd=ROOT, timeout=60).stdout
    assert "weights: 121/163 shards (74.2%)" in text


def _shape(line: str) -> str:
    return re.sub(r"\d", "0", line)


def test_simulated_load_bar_prints_what_tqdm_prints() -> None:
    # Real updates (sources above; the 0/1 first update is SGLang's own notebook output in the code index).
    first = "Loading safetensors checkpoint shards:   0% Completed | 0/1 [00:00<?, ?it/s]"
    assert logs.load_bar(0, 1, 0.0) == first
    assert _shape(logs.load_bar(120, 163, 37.0)) == _shape(LOAD_BAR[0])
    assert _shape(logs.load_bar(40, 85, 809.0)) == _shape(LOAD_BAR_SLOW)  # slower than 1 shard/s: s/it
    s = summarize([logs.load_bar(29, 64, 723.0)])
    assert s["load"] is not None and (s["load"]["done"], s["load"]["total"]) == (29, 64)


def test_simulated_lines_honour_log_ms_and_forward_iters(monkeypatch) -> None:
    monkeypatch.setenv("SGLANG_LOG_MS", "1")
    monkeypatch.setenv("SGLANG_LOG_FORWARD_ITERS", "1")
    line = logs.sglang_line("Decode batch, #running-req: 1, #token: 41, token usage: 0.00, cuda graph: True, "
                            "gen throughput (token/s): 122.53, #queue-req: 0, ", 0, 8)
    assert re.match(r"\[\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d{3} TP0\] Decode batch \[\d+\], #running-req", line)
    p = SglangLogParser()
    p.feed([line, logs.child_failed_line(running=True)])
    assert p.decode_samples == 1 and p.decode.forward_ct is not None
    assert codes(p.summary()) == {"CHILD_FAILED": "error"}

