"""The /metrics reader on real captured SGLang output (tests/data/metrics/SOURCE.md), and its fetch bounded
over real HTTP on 127.0.0.1: size cap, deadline, 404 said as --enable-metrics, loopback never proxied."""

from __future__ import annotations

import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from eagle_console.sglang.metrics import MetricsError, Rank, fetch, figures, parse, quantile

DATA = Path(__file__).parent / "data" / "metrics"


def test_sglang_docs_capture():
    """https://github.com/sgl-project/sglang/blob/main/docs/references/production_metrics.md (the docs'
    `curl http://localhost:30000/metrics`): an old server, labels `model_name` only: one unnamed rank."""
    s = parse((DATA / "sglang_production_metrics_doc.txt").read_text())
    assert list(s.ranks) == [Rank(None, None, None)]
    assert Rank(None, None, None).label() == "all"
    f = figures(s)
    assert f.gen_throughput == pytest.approx(86.50814177726902)
    assert (f.running_reqs, f.queue_reqs, f.token_usage) == (162, 2826, 0.28)
    assert f.speculative is False and f.accept_length is None  # no spec gauges: no speculative decoding
    assert s.counters == {"prompt_tokens": 8.128902e6, "generation_tokens": 7.557572e6}
    ttft = s.histograms["ttft"]
    assert ttft.count == 11008.0 and ttft.total == pytest.approx(2.3518979474117756e6)
    # 2513 of 11008 under 30 s: the median lies past the last finite bucket, whose bound is all one knows
    assert quantile(0.5, ttft) == 30.0
    # 140 of 11008 under 2.5 s, 314 under 5: the 2 % point is inside (2.5, 5], interpolated
    assert quantile(0.02, ttft) == pytest.approx(2.5 + 2.5 * (0.02 * 11008 - 140) / (314 - 140))
    assert "itl" not in s.histograms  # this old server had time_per_output_token instead


def test_dp8_ranks_capture_adds_groups_up():
    """https://github.com/vllm-project/aibrix/issues/1614: DP attention over 8 ranks, `dp_rank`/`tp_rank`
    labels, some gauges with a multiprocess `pid` label; each DP group's batch is its own: throughputs add."""
    s = parse((DATA / "aibrix1614_dp8_ranks.txt").read_text())
    assert sorted(r.label() for r in s.ranks) == [f"dp{i}·tp{i}" for i in range(8)]
    seven = (141.7546862896204, 35.423840583853774, 35.41880810293355, 141.74408727960696, 35.43700884115304,
             35.442541417324875, 140.76470568188876)  # dp_rank 1's line is before the thread's excerpt
    assert figures(s).gen_throughput == pytest.approx(sum(seven))
    assert figures(s).queue_reqs == 0


def test_engine_type_capture_idle():
    """https://github.com/sgl-project/sglang/pull/4412 ("Metrics Result"): engine_type + model_name, idle."""
    f = figures(parse((DATA / "sglang4412_engine_type.txt").read_text()))
    assert (f.running_reqs, f.gen_throughput, f.token_usage, f.accept_length) == (0, 0.0, 0.0, None)


def test_every_tp_rank_exporting_is_not_counted_eight_times():
    """--enable-metrics-for-all-schedulers: the TP ranks of one group repeat its batch; rank 0 speaks for it."""
    lines = [f'sglang:gen_throughput{{engine_type="unified",model_name="m",pp_rank="0",tp_rank="{r}"}} 90.0'
             for r in range(8)]
    lines += [f'sglang:spec_accept_length{{engine_type="unified",model_name="m",pp_rank="0",tp_rank="{r}"}} 2.5'
              for r in range(8)]
    f = figures(parse("\n".join(lines) + "\n"))
    assert f.gen_throughput == 90.0 and f.accept_length == 2.5 and f.speculative


def test_not_prometheus_text_is_said():
    with pytest.raises(MetricsError, match="not Prometheus text"):
        parse('sglang:gen_throughput{model_name="m" 12\n')


# ---- fetch over real HTTP --------------------------------------------------------------------------------


class _Server:
    def __init__(self, handler: type[BaseHTTPRequestHandler]) -> None:
        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self.httpd.daemon_threads = True
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/metrics"

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


def _serve(body: bytes | None = None, status: int = 200, drip: bool = False) -> _Server:
    class H(BaseHTTPRequestHandler):
        def log_message(self, *a):
            pass

        def do_GET(self):  # noqa: N802
            self.send_response(status)
            self.send_header("content-type", "text/plain")
            if drip:  # a server that never finishes its answer
                self.send_header("content-length", "100000")
                self.end_headers()
                try:
                    for _ in range(200):
                        self.wfile.write(b"#")
                        self.wfile.flush()
                        time.sleep(0.05)
                except OSError:
                    pass
                return
            data = body or b""
            self.send_header("content-length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

    return _Server(H)


def test_fetch_reads_a_real_capture_over_http():
    text = (DATA / "sglang4412_engine_type.txt").read_bytes()
    srv = _serve(text)
    try:
        assert fetch(srv.url) == text.decode()
    finally:
        srv.close()


def test_fetch_refuses_a_body_over_the_cap():
    srv = _serve(b"# x\n" * 5000)
    try:
        with pytest.raises(MetricsError, match="more than"):
            fetch(srv.url, max_bytes=1 << 10)
    finally:
        srv.close()


def test_fetch_gives_up_on_a_slow_drip():
    srv = _serve(drip=True)
    try:
        with pytest.raises(MetricsError, match="within 1 s"):
            fetch(srv.url, timeout_s=1.0)
    finally:
        srv.close()


def test_fetch_says_404_is_a_server_without_enable_metrics():
    srv = _serve(b'{"detail":"Not Found"}', status=404)
    try:
        with pytest.raises(MetricsError, match="--enable-metrics"):
            fetch(srv.url)
    finally:
        srv.close()


def test_fetch_of_loopback_ignores_the_proxy(monkeypatch):
    """HTTP_PROXY set to nothing that listens: loopback goes direct, as every other probe (issue #18)."""
    srv = _serve(b"# ok\n")
    monkeypatch.setenv("HTTP_PROXY", "http://127.0.0.1:9")
    monkeypatch.setenv("http_proxy", "http://127.0.0.1:9")
    monkeypatch.delenv("NO_PROXY", raising=False)
    monkeypatch.delenv("no_proxy", raising=False)
    try:
        assert fetch(srv.url) == "# ok\n"
    finally:
        srv.close()


def test_fetch_of_nothing_listening_is_unreachable():
    srv = _serve(b"")
    url = srv.url
    srv.close()
    with pytest.raises(MetricsError, match="unreachable"):
        fetch(url, timeout_s=1.0)


# ---- the ranks a server's launch flags promise ------------------------------------------------------------

def test_expected_ranks_from_the_launch_flags():
    from eagle_console.ops.metrics import expected_ranks

    assert expected_ranks(8, [])[0] == {"0"}  # TP rank 0 exports for the group
    assert expected_ranks(8, ["--enable-metrics-for-all-schedulers"])[0] == {str(r) for r in range(8)}
    assert expected_ranks(8, ["--enable-metrics-for-all-schedulers"], nnodes=2)[0] == {"0", "1", "2", "3"}
    assert expected_ranks(8, ["--enable-dp-attention", "--dp-size=8"])[0] == {str(r) for r in range(8)}
    # 0.5.23's own flag (fields/parallel.py:81-90; --enable-dp-attention is deprecated there)
    assert expected_ranks(8, ["--attn-dp-size", "4"])[0] == {"0", "2", "4", "6"}
    assert expected_ranks(8, ["--enable-dp-attention", "--dp", "2"])[0] == {"0", "4"}


DP8_PLAN = '''[plan]
id = "dp8"
title = "dp8"

[[phase]]
id = "0"
title = "p"

  [[phase.step]]
  id = "0.3"
  title = "server"
  uses = "sglang.server"
  [phase.step.with]
  model = "/models/DeepSeek-R1"
  tp = 8
  port = 30000
  args = ["--enable-metrics", "--enable-dp-attention", "--dp-size", "8"]
'''


def test_rank_metrics_missing_on_the_dp8_capture(tmp_path):
    """aibrix#1614's DP8 capture with dp_rank 5's lines taken out: the flags promise tp5, it is not there."""
    from eagle_console.journal import Journal
    from eagle_console.ops.metrics import MetricsWatch
    from eagle_console.plan.loader import load_plan

    full = (DATA / "aibrix1614_dp8_ranks.txt").read_text()
    cut = "\n".join(line for line in full.splitlines() if 'dp_rank="5"' not in line) + "\n"
    (tmp_path / "plan.toml").write_text(DP8_PLAN)
    plan = load_plan(tmp_path / "plan.toml")
    journal = Journal.for_plan(plan)
    try:
        watch = MetricsWatch(plan, journal)
        doc = watch.poll(lambda url: parse(full))
        assert doc["url"] == "http://127.0.0.1:30000/metrics" and doc["findings"] == []
        doc = watch.poll(lambda url: parse(cut))
        (f,) = doc["findings"]
        assert f["code"] == "RANK_METRICS_MISSING" and "tp5" in f["message"] and "--enable-dp-attention" in f["message"]
        assert len(doc["ranks"]) == 7
    finally:
        journal.close()



def test_priority_series_do_not_overwrite_the_total():
    """--enable-priority-scheduling (0.5.23 metrics_collector.py:1389-1390, :1417-1429): the running and
    queued counts are the total under priority="" with one series per priority beside it. Before: the last series
    read (a priority's 3) stood for the rank's 8 running requests."""
    base = 'engine_type="unified",model_name="m",moe_ep_rank="0",pp_rank="0",tp_rank="0"'
    text = "".join(f'sglang:num_running_reqs{{{base},priority="{p}"}} {v}\n'
                   for p, v in (("", 8), ("0", 5), ("1", 3)))
    text = "# HELP sglang:num_running_reqs x\n# TYPE sglang:num_running_reqs gauge\n" + text
    scrape = parse(text)
    (values,) = scrape.ranks.values()
    assert values["running_reqs"] == 8, scrape.ranks
