"""The CUDA-graph advice of `server-log` names the flag the running SGLang has (docs/upstream.md)."""

from __future__ import annotations

from eagle_console.parse.sglang_log import summarize

FAILED = "[2026-01-05 10:00:01 TP0] Exception: Capture cuda graph failed: invalid argument"


def advice(lines: list[str]) -> str:
    (finding,) = [f for f in summarize(lines)["findings"] if f["code"] == "CUDA_GRAPH_CAPTURE_FAILED"]
    return finding["message"]


def test_old_server_gets_the_old_flag():
    old = "[2026-01-05 10:00:00] server_args=ServerArgs(model_path='/m', cuda_graph_max_bs=None, tp_size=8)"
    message = advice([old, FAILED])
    assert "--cuda-graph-max-bs" in message and "--cuda-graph-max-bs-decode" not in message


def test_new_server_gets_the_renamed_flag():
    new = ("[2026-01-05 10:00:00] server_args=ServerArgs(model_path='/m', cuda_graph_max_bs_decode=None, "
           "cuda_graph_bs_decode=None, tp_size=8)")
    message = advice([new, FAILED])
    assert "--cuda-graph-max-bs-decode" in message
