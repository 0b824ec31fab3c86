"""The server log as SGLang 0.5.23 writes it, read beside the older forms (docs/upstream.md, "Server log and
arguments (SGLang 0.5.23)").

Lines are real upstream text: tracebacks from public issues (tests/data/sglang/SOURCE.md, sglang#4205),
the dict dump as AMD-AGI/GEAK#470 quotes it, and 0.5.23's own format strings filled in where no public log
of the new line exists yet (file:line of the 0.5.23 wheel at each).
"""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import clikit

from eagle_console.parse.sglang_log import SglangLogParser, summarize

DATA = Path(__file__).parent / "data" / "sglang"

# AMD-AGI/GEAK#470: "SGLang startup logs can emit `server_args={'model_path': '/models/example', 'tp_size': 1,
# ...}`"; the two CUDA-graph keys are 0.5.23 fields (srt/arg_groups/field_order.py:227-228).
DICT_DUMP = ("[2026-09-17 10:00:00] server_args={'model_path': '/models/example', 'tp_size': 1, "
             "'cuda_graph_max_bs_decode': None, 'cuda_graph_max_bs_prefill': None}")
# sglang#4205 (0.4.x), the end of a capture failure: the runner raises a bare `Exception`.
CAPTURE_FAILED_4205 = [
    "[2025-03-07 10:21:03 TP0] Scheduler hit an exception: Traceback (most recent call last):",
    '  File "/usr/local/lib/python3.10/dist-packages/sglang/srt/managers/scheduler.py", line 1816, in '
    "run_scheduler_process",
    "    scheduler = Scheduler(server_args, port_args, gpu_id, tp_rank, dp_rank)",
    '  File "/usr/local/lib/python3.10/dist-packages/sglang/srt/model_executor/cuda_graph_runner.py", line 239, '
    "in __init__",
    "    raise Exception(",
    "Exception: Capture cuda graph failed: [../third_party/gloo/gloo/transport/tcp/pair.cc:534] Connection "
    "closed by peer [10.0.0.2]:11437",
]


def findings(lines: list[str]) -> dict[str, dict]:
    return {f["code"]: f for f in summarize(lines)["findings"]}


def test_dict_dump_of_0_5_23_gets_the_flags_0_5_23_accepts() -> None:
    failed = "[2026-09-17 10:00:05 TP0] Exception: Capture cuda graph failed: CUDA error: operation not permitted when stream is capturing"
    message = findings([DICT_DUMP, failed])["CUDA_GRAPH_CAPTURE_FAILED"]["message"]
    assert "--cuda-graph-max-bs-decode" in message and "--cuda-graph-backend-decode=disabled" in message
    assert "--cuda-graph-max-bs," not in message and "--disable-cuda-graph" not in message


def test_old_repr_dump_keeps_the_old_flags_and_no_dump_names_both() -> None:
    failed = "[2026-01-05 10:00:01 TP0] Exception: Capture cuda graph failed: invalid argument"
    old = "[2026-01-05 10:00:00] server_args=ServerArgs(model_path='/m', cuda_graph_max_bs=None, tp_size=8)"
    message = findings([old, failed])["CUDA_GRAPH_CAPTURE_FAILED"]["message"]
    assert "/ --cuda-graph-max-bs, or --disable-cuda-graph" in message and "0.5.23" not in message
    unknown = findings([failed])["CUDA_GRAPH_CAPTURE_FAILED"]["message"]
    assert "SGLang 0.5.23: --cuda-graph-max-bs-decode" in unknown


def test_oom_inside_scheduler_exception_is_named_as_oom_with_advice() -> None:
    # kvcache-ai/ktransformers#1969's real traceback (a scheduler dying in init), closed by an OOM line.
    lines = (DATA / "ktransformers1969_scheduler_exception.txt").read_text(encoding="utf-8").splitlines()
    lines.append("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB.")
    got = findings([DICT_DUMP, *lines])
    assert "SCHEDULER_EXCEPTION" not in got
    assert got["CUDA_OOM"]["message"].startswith("Scheduler hit an exception: Traceback")
    assert "--cuda-graph-max-bs-decode" in got["CUDA_OOM"]["message"]


def test_bare_exception_line_closes_the_traceback() -> None:
    s = summarize(CAPTURE_FAILED_4205)
    assert not any("cut off" in e for e in s["errors"])
    assert [f["code"] for f in s["findings"]] == ["CUDA_GRAPH_CAPTURE_FAILED"]
    assert s["errors"] == ["Scheduler hit an exception: Traceback (most recent call last): … Exception: Capture "
                           "cuda graph failed: [../third_party/gloo/gloo/transport/tcp/pair.cc:534] Connection "
                           "closed by peer [10.0.0.2]:11437"]


def test_kv_cache_va_upper_bound_is_the_kv_cache_stage() -> None:
    # 0.5.23 mem_cache/memory_pool.py:2096 with post_capture_active
    line = "[2026-09-20 12:00:00 TP0] KV Cache VA upper bound. dtype: torch.bfloat16, #tokens: 834615, KV size: 54.32 GB"
    assert [s["name"] for s in summarize([line])["stages"]] == ["KV cache"]


def test_prefill_capture_failure_gets_the_prefill_flags() -> None:
    # 0.5.23 model_executor/runner/prefill_cuda_graph_runner.py:521 (a RuntimeError inside the scheduler)
    lines = ["[2026-09-20 12:00:00 TP0] Scheduler hit an exception: Traceback (most recent call last):",
             '  File "/sgl/python/sglang/srt/model_executor/runner/prefill_cuda_graph_runner.py", line 521, in '
             "__init__",
             "    raise RuntimeError(",
             "RuntimeError: Capture prefill CUDA graph failed: backend=inductor raised: CompilationError",
             "Fail when using backend: tc_piecewise for prefill runner."]
    got = findings(lines)
    assert list(got) == ["CUDA_GRAPH_CAPTURE_FAILED"]
    assert "--cuda-graph-max-bs-prefill" in got["CUDA_GRAPH_CAPTURE_FAILED"]["message"]


def test_custom_allreduce_disabled_on_pcie_only_gpus_is_recognised() -> None:
    # 0.5.23 distributed/device_communicators/custom_all_reduce_utils.py:493-497 (cls_name "CustomAllreduce");
    # older releases and vLLM: "Custom allreduce is disabled ..." (vllm-project/vllm#13719).
    new = ("[2026-09-20 12:00:00 TP3] CustomAllreduce is disabled because it's not supported on more than two "
           "PCIe-only GPUs. To silence this warning, specify disable_custom_all_reduce=True explicitly.")
    old = ("[2025-02-22 22:09:01 TP1] Custom allreduce is disabled because it's not supported on more than two "
           "PCIe-only GPUs. To silence this warning, specify disable_custom_all_reduce=True explicitly.")
    for line in (new, old):
        s = summarize([line])
        assert [(f["code"], f["severity"]) for f in s["findings"]] == [("CUSTOM_ALLREDUCE_DISABLED", "info")]
        assert s["errors"] == []


def test_decode_fields_of_0_5_23_and_the_accept_rate_definition() -> None:
    # 0.5.23 managers/scheduler_components/metrics_reporter.py:961-1045 (report_decode_stats), filled in
    line = ("[2026-09-20 12:00:10 TP0] Decode batch, #running-req: 4, #token: 2048, token usage: 0.02, "
            "accept len: 2.61, accept rate: 0.54, cap len: 3.00, block accept len: 2.95, cuda graph: True, "
            "gen throughput (token/s): 312.44, #queue-req: 0")
    p = SglangLogParser()
    p.feed([line])
    assert (p.decode.accept_len, p.decode.accept_rate, p.decode.cap_len, p.decode.block_accept_len) == (
        2.61, 0.54, 3.0, 2.95)
    assert p.summary()["decode"] == {"gen_throughput": 312.44, "accept_len": 2.61, "running_req": 4,
                                     "token_usage": 0.02}
    assert "bonus token excluded" in p.accept_rate_definition()
    assert "bonus token excluded" in (p.describe_decode() or "") and "cap len 3.00" in (p.describe_decode() or "")


def test_old_accept_rate_with_nothing_accepted_is_named_old() -> None:
    # sglang#11948's decode form; the old formula gives 1/num_draft_tokens when no draft is accepted
    line = ("[2025-10-22 10:27:56 TP0] Decode batch. #running-req: 1, #token: 100, token usage: 0.00, "
            "accept len: 1.00, accept rate: 0.25, cuda graph: True, gen throughput (token/s): 90.00, #queue-req: 0")
    p = SglangLogParser()
    p.feed([line])
    assert "older SGLang" in p.accept_rate_definition()


def test_server_log_cli_says_what_the_accept_rate_counts(tmp_path: Path) -> None:

    log = tmp_path / "server.log"
    log.write_text(DICT_DUMP + "\n[2026-09-20 12:00:10 TP0] Decode batch, #running-req: 1, #token: 300, token usage: "
                   "0.00, accept len: 1.00, accept rate: 0.00, cuda graph: True, gen throughput (token/s): 80.10, "
                   "#queue-req: 0\n", encoding="utf-8")
    out = clikit.run(["server-log", log], timeout=60)
    assert out.returncode == 0, out.stderr
    assert "accept rate 0.00 (accepted drafts / proposed drafts (bonus token excluded))" in out.stdout


def test_the_server_panes_head_shows_the_accept_rate_with_its_definition() -> None:
    """The console's Server pane says what 0.5.23's figures are, not only `server-log`: the accept rate
    with "bonus token excluded", and `cap len` / `block accept len` (the pane's digest, as it is drawn)."""
    from eagle_console.tui.panes.server import ServerPane, summary_text

    line = ("[2026-09-20 12:00:10 TP0] Decode batch, #running-req: 4, #token: 2048, token usage: 0.02, "
            "accept len: 2.61, accept rate: 0.54, cap len: 3.00, block accept len: 2.95, cuda graph: True, "
            "gen throughput (token/s): 312.44, #queue-req: 0")
    pane = ServerPane.__new__(ServerPane)  # its digest only: no app, no widget tree
    pane.ctx = SimpleNamespace(plan=SimpleNamespace(baseline={"tok_s": 82.0}))  # the plan's baseline (BELOW_BASELINE)
    pane.reset_digest()
    summary, history, speculative = pane.digest([line])
    head = summary_text(summary, history, speculative).plain
    assert "accept rate 0.54 (accepted drafts / proposed drafts (bonus token excluded))" in head, head
    assert "cap len 3.00" in head and "block accept len 2.95" in head and "312.4 tok/s" in head
