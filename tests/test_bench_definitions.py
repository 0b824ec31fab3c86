"""The bench as SGLang's bench_serving computes it, against the real simulated server (docs/upstream.md)."""

from __future__ import annotations

import signal
import statistics

import pytest
from test_sim_server import start_server, wait_ready

from eagle_console.sglang.bench import run_bench
from eagle_console.sglang.client import SglangClient, accept_length_from_info


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    s = start_server(tmp_path_factory.mktemp("bench-def"), tp=2)
    try:
        wait_ready(s)
        yield s
    finally:
        s.cleanup()


def chunk_gaps_ms(url: str, tokens: int) -> tuple[list[float], list[int]]:
    """What the old bench called ITL: the time between token-carrying chunks, and the tokens each carried."""
    with SglangClient(url) as c:
        chunks = list(c.stream_generate("gaps", tokens))
    gaps = [(b.t - a.t) * 1000 for a, b in zip(chunks, chunks[1:], strict=False)]
    sizes = [b.completion_tokens - a.completion_tokens for a, b in zip(chunks, chunks[1:], strict=False)]
    return gaps, sizes


def test_itl_is_per_token_and_matches_decode_speed(server):
    gaps, sizes = chunk_gaps_ms(server.url, 96)
    assert max(sizes) > 1  # EAGLE-3: a verify step streams every token it accepted in one chunk
    r = run_bench(server.url, requests=3, max_new_tokens=96).to_json()
    assert r["decode_tok_s"] and r["itl_ms_mean"]
    # mean ITL (chunk gap / tokens in it, once per token) is 1000 / decode tok/s
    assert r["itl_ms_mean"] == pytest.approx(1000 / r["decode_tok_s"], rel=0.05)
    # ... and well below the chunk gap the old computation reported
    assert r["itl_ms_median"] < 0.75 * statistics.median(gaps)
    assert r["tpot_ms_median"] > 0 and r["tok_s"] < r["decode_tok_s"]  # end to end includes the prefill
    d = r["definitions"]
    assert d["itl_ms"].startswith("bench_serving: chunk gap / tokens") and d["cache_flushed"] is True
    assert d["server_info_endpoint"] == "/server_info" and d["prompt_format"] == "raw prompt (/generate)"
    assert d["accept_length"] == "requests: completion_tokens / spec_verify_ct"


def test_flush_cache_restarts_the_servers_accept_length(server):
    with SglangClient(server.url) as c:
        c.generate("before", max_new_tokens=30)
        assert accept_length_from_info(c.server_info()) is not None
        assert c.flush_cache()
        assert accept_length_from_info(c.server_info()) is None  # nothing decoded since the flush


def test_chat_prompts_go_through_the_chat_template(server):
    r = run_bench(server.url, requests=2, max_new_tokens=24, chat=True).to_json()
    assert r["output_tokens"] == 48 and r["failed"] == 0
    assert r["definitions"]["prompt_format"] == "chat template (/v1/chat/completions)"
    # no spec_verify_ct in chat chunks: the server's figure, which the flush limited to this run
    assert r["definitions"]["accept_length"] == "server: avg_spec_accept_length since /flush_cache"
    assert 1.0 <= r["accept_length"] <= 4.0
    assert r["itl_ms_mean"] == pytest.approx(1000 / r["decode_tok_s"], rel=0.05)


def test_old_server_info_endpoint_is_the_fallback(tmp_path):
    s = start_server(tmp_path, tp=2, env={"EAGLE_SIM_NO_SERVER_INFO": "1"})
    try:
        wait_ready(s)
        r = run_bench(s.url, requests=1, max_new_tokens=16).to_json()
        assert r["definitions"]["server_info_endpoint"] == "/get_server_info"
        assert r["accept_length_server"] is not None
    finally:
        s.cleanup()


def test_a_failed_request_is_reported_with_the_partial_results(tmp_path):
    s = start_server(tmp_path, tp=2)
    try:
        wait_ready(s)

        def stop_after_first(done: int, total: int, stats) -> None:
            if done == 1:
                s.proc.send_signal(signal.SIGTERM)
                s.proc.wait(timeout=20)

        r = run_bench(s.url, requests=3, max_new_tokens=16, progress=stop_after_first).to_json()
        assert r["requests"] == 1 and r["output_tokens"] == 16 and r["failed"] == 2
        assert len(r["errors"]) == 2 and all("ConnectError" in e for e in r["errors"])
        assert [row["error"] is None for row in r["per_request"]] == [True, False, False]
    finally:
        s.cleanup()
