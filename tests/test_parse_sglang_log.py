"""SGLang server log summary on real logs from public issues (tests/data/sglang/SOURCE.md)."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import clikit

from eagle_console.parse.sglang_log import (
    POINTS_LEN,
    SglangLogParser,
    parse_decode,
    parse_prefill,
    split_prefix,
    summarize,
)

DATA = Path(__file__).parent / "data" / "sglang"
ROOT = Path(__file__).parent.parent


def lines(*names: str) -> list[str]:
    out: list[str] = []
    for name in names:
        out += (DATA / name).read_text(encoding="utf-8").splitlines()
    return out


def codes(summary: dict) -> dict[str, str]:
    return {f["code"]: f["severity"] for f in summary["findings"]}


def test_old_decode_with_tp0_and_accept_len() -> None:
    p = SglangLogParser()
    p.feed(lines("sglang11948_eagle3_decode_tp0.txt"))
    s = p.summary()
    assert s["decode_samples"] == 5
    assert s["decode"] == {"gen_throughput": 165.59, "accept_len": 1.8, "running_req": 1, "token_usage": 0.0}
    assert list(p.history) == [(0.39, 2.17), (178.86, 1.95), (165.41, 1.8), (188.68, 2.05), (165.59, 1.8)]
    assert p.decode.accept_rate == 0.45 and p.decode.tp_rank == 0 and p.decode.queue_req == 0
    assert p.prefill_samples == 1 and p.prefill.new_token == 28
    assert set(s) == {"ready", "stages", "decode", "decode_samples", "errors", "findings", "load"}
    assert s["load"] is None


def test_new_decode_comma_form_without_tp_or_accept_len() -> None:
    p = SglangLogParser()
    p.feed(lines("sglang22166_decode_comma_new.txt"))
    assert p.summary()["decode"] == {"gen_throughput": 1635.11, "accept_len": None, "running_req": 32,
                                     "token_usage": 0.08}
    assert p.decode.tp_rank is None
    assert p.prefill_samples == 3 and p.prefill.input_throughput == 4099.38 and p.prefill.running_req == 31


def test_old_prefill_with_cache_hit_rate() -> None:
    p = SglangLogParser()
    p.feed(lines("sglang2777_prefill_old_tp0.txt"))
    assert p.prefill_samples == 7 and p.decode is None
    assert (p.prefill.new_seq, p.prefill.new_token, p.prefill.cached_token, p.prefill.queue_req) == (1, 55, 0, 57)


def test_startup_stages_in_order_with_and_without_tp() -> None:
    s = summarize(lines("sglang4826_startup_tp0.txt"))
    assert [x["name"] for x in s["stages"]] == ["load weights", "KV cache", "memory pool", "CUDA graph capture begin"]
    assert s["stages"][1]["line"].startswith("[2025-03-27 21:33:31 TP0] KV Cache is allocated. #tokens: 834615")
    s = summarize(lines("sglang11830_startup_new.txt"))
    assert [x["name"] for x in s["stages"]] == ["KV cache", "memory pool", "CUDA graph capture begin",
                                                "CUDA graph capture"]
    assert not s["ready"] and s["errors"] == []


def test_eight_ranks_interleaved_give_each_stage_once() -> None:
    s = summarize(lines("sglang11716_startup_tp8.txt"))
    assert [x["name"] for x in s["stages"]] == ["KV cache", "memory pool", "CUDA graph capture begin"]
    assert "TP5" in s["stages"][0]["line"]  # the first rank to get there


def test_ready_line_and_kv_cache_2026_form() -> None:
    s = summarize(lines("sglang27537_kv_dtype_2026.txt", "sglang12978_capture_end_tp2.txt", "kvcache50_ready.txt"))
    assert s["ready"] is True
    assert [x["name"] for x in s["stages"]][-2:] == ["CUDA graph capture", "ready"]
    assert "KV cache" in [x["name"] for x in s["stages"]]


def test_not_enough_memory() -> None:
    s = summarize(lines("sglang4330_not_enough_memory.txt"))
    assert s["errors"] == ["RuntimeError: Not enough memory. Please try to increase --mem-fraction-static."]
    assert codes(s) == {"NOT_ENOUGH_MEMORY": "error"}


def test_cuda_oom_traceback_becomes_one_error() -> None:
    s = summarize(lines("sglang4547_cuda_oom_traceback.txt"))
    assert s["errors"] == ["Traceback (most recent call last): … RuntimeError: CUDA error: out of memory"]
    assert codes(s) == {"CUDA_OOM": "error"}


def test_scheduler_exception_traceback_still_being_written() -> None:
    p = SglangLogParser()
    p.feed(lines("ktransformers1969_scheduler_exception.txt"))
    s = p.summary()
    assert codes(s) == {"CHILD_FAILED": "error", "SCHEDULER_EXCEPTION": "error"}
    assert s["errors"][-1].startswith("Scheduler hit an exception: Traceback")
    assert s["errors"][-1].endswith("(traceback still being written)")
    # the exception line arrives: the same traceback closes into one error
    p.feed(["torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB."])
    s = p.summary()
    assert s["errors"][-1] == ("Scheduler hit an exception: Traceback (most recent call last): … "
                               "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB.")
    # the cause wins over "which process raised" (SGLang 0.5.23 scheduler.py:6370-6372 wraps every cause)
    assert codes(s) == {"CHILD_FAILED": "error", "CUDA_OOM": "error"}
    assert len(s["errors"]) == 2


def test_docker_prefix_and_custom_allreduce_info() -> None:
    s = summarize(lines("sglang12496_docker_prefix.txt"))
    assert codes(s) == {"CUSTOM_ALLREDUCE_FAILED": "info"}
    assert s["errors"] == []  # informational: PCIe GPUs without P2P
    assert split_prefix("sglang-1  | [2025-11-01 16:50:36 TP0] sglang is using nccl==2.27.3") == (
        "2025-11-01 16:50:36", "TP0", "sglang is using nccl==2.27.3")


def test_dp_tp_prefix() -> None:
    ts, ranks, msg = split_prefix(lines("sglang7691_dp_tp_prefix.txt")[0])
    assert (ts, ranks) == ("2025-07-02 07:41:58", "DP0 TP0") and msg.startswith("Load weight end.")


def test_low_accept_length_finding() -> None:
    base = lines("sglang11948_eagle3_decode_tp0.txt")[1]
    low = [base.replace("accept len: 2.17", f"accept len: {v:.2f}") for v in (1.02, 1.05, 1.01, 1.10, 1.04)]
    s = summarize(low)
    assert codes(s) == {"LOW_ACCEPT_LEN": "warning"}
    assert "LOW_ACCEPT_LEN" not in codes(summarize(lines("sglang11948_eagle3_decode_tp0.txt")))


def test_history_is_bounded() -> None:
    p = SglangLogParser(history_len=3)
    p.feed(lines("sglang11948_eagle3_decode_tp0.txt"))
    assert [t for t, _a in p.history] == [165.41, 188.68, 165.59] and p.decode_samples == 5


def test_non_decode_lines_are_not_decode() -> None:
    assert parse_decode("[2025-01-07 20:16:02] INFO:     127.0.0.1:41452 - \"GET /get_model_info HTTP/1.1\" 200 OK") is None
    assert parse_prefill(lines("sglang11948_eagle3_decode_tp0.txt")[1]) is None


def run_cli(*args: str) -> subprocess.CompletedProcess[str]:
    return clikit.run(args, cwd=ROOT, timeout=60)


def test_cli_server_log(tmp_path: Path) -> None:
    log = tmp_path / "server.log"
    log.write_text("\n".join(lines("sglang4826_startup_tp0.txt", "kvcache50_ready.txt",
                                   "sglang11948_eagle3_decode_tp0.txt")) + "\n")
    r = run_cli("server-log", str(log), "--json")
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    assert doc["ready"] and doc["decode"]["accept_len"] == 1.8 and doc["decode_samples"] == 5
    r = run_cli("server-log", str(log))
    assert r.returncode == 0 and "ready: yes" in r.stdout and "165.59 tok/s" in r.stdout
    r = run_cli("server-log", str(DATA / "sglang4330_not_enough_memory.txt"))
    assert r.returncode == 1 and "NOT_ENOUGH_MEMORY" in r.stdout
    r = run_cli("server-log", str(tmp_path / "nope.log"))
    assert r.returncode == 2 and "no such file" in r.stderr and "Traceback" not in r.stderr


def _flood(count: int) -> list[str]:
    """`count` decode logs with distinct figures, and between them the other lines a server writes."""
    base = lines("sglang11948_eagle3_decode_tp0.txt")[1]
    out = []
    for i in range(count):
        out.append(base.replace("0.39", f"{100 + i % 997}.{i % 100:02d}").replace("2.17", f"{1 + (i % 89) / 100:.2f}"))
        if i % 500 == 0:
            out.append("[2026-01-05 10:27:57 TP0] Prefill batch. #new-seq: 1, #new-token: 28, #cached-token: 0, "
                       "token usage: 0.00, #running-req: 0, #queue-req: 0")
            out.append("[2026-01-05 10:27:57] INFO:     127.0.0.1:41452 - \"POST /generate HTTP/1.1\" 200 OK")
    return out


def test_a_flood_of_decode_logs_reads_as_if_each_was_parsed_when_fed() -> None:
    flood = _flood(5000)
    p = SglangLogParser(history_len=120)
    fed: list = []
    for start in range(0, len(flood), 777):  # read between batches, as the Server pane's poll does
        batch = flood[start:start + 777]
        p.feed(batch)
        fed += [s for s in (parse_decode(split_prefix(x)[2]) for x in batch) if s is not None]
        assert p.decode_samples == len(fed)
        assert list(p.history) == [(s.gen_throughput, s.accept_len) for s in fed[-120:]]
        assert (p.decode.gen_throughput, p.decode.accept_len, p.decode.tp_rank) == (fed[-1].gen_throughput,
                                                                                   fed[-1].accept_len, 0)
        # the alarms' points (parse/alarms.py): the last POINTS_LEN timestamped ones, figures as fed
        assert [(pt.gen_throughput, pt.accept_length, pt.running) for pt in p.points] == [
            (s.gen_throughput, s.accept_len, s.running_req) for s in fed[-POINTS_LEN:]]
    assert p.summary()["decode_samples"] == 5000 and p.prefill_samples == 10


def test_a_flood_of_decode_logs_parses_the_figures_of_the_ones_read_only(monkeypatch) -> None:
    """The Server pane follows a log of thousands of decode lines a second: their nine figures each were
    parsed as they came (80 % of its follow thread); only the last `history_len` are ever shown, and the
    last POINTS_LEN held for the alarms (issue 33)."""
    import eagle_console.parse.sglang_log as sglang_log

    calls = []
    real = sglang_log.parse_decode
    monkeypatch.setattr(sglang_log, "parse_decode", lambda msg: calls.append(msg) or real(msg))
    p = SglangLogParser(history_len=120)
    p.feed(_flood(5000))
    assert p.summary()["decode_samples"] == 5000
    assert len(calls) <= max(120, POINTS_LEN) < 5000
