"""`/metrics` of the simulated server, in SGLang 0.5.23's exposition: the same names, HELP texts, types,
labels and histogram buckets as srt/observability/metrics_collector.py, written by prometheus_client as
SGLang's are (SGLang runs it in multiprocess mode, which adds no `_created` series: nor do we).

Scheduler gauges carry model_name, engine_type, tp_rank, pp_rank, moe_ep_rank and are exported by TP rank 0
only, or by every scheduler with --enable-metrics-for-all-schedulers (metrics_collector.py:1360-1367);
they change when the scheduler logs a decode batch (every --decode-log-interval steps) and when it goes idle.
Tokenizer counters and histograms carry model_name, engine_type (and is_streaming where SGLang has it).
"""

from __future__ import annotations

import threading
from typing import Any

# metrics_collector.py:1965-2035, the default buckets.
TTFT_BUCKETS = (0.1, 0.2, 0.4, 0.6, 0.8, 1, 2, 4, 6, 8, 10, 20, 40, 60, 80, 100, 200, 400)
E2E_BUCKETS = (0.1, 0.2, 0.4, 0.6, 0.8, 1, 2, 4, 6, 8, 10, 20, 40, 60, 80, 100, 200, 400, 600, 1200, 1800, 2400)
ITL_BUCKETS = (0.002, 0.004, 0.006, 0.008, 0.010, 0.015, 0.020, 0.025, 0.030, 0.035, 0.040, 0.060, 0.080,
               0.100, 0.200, 0.400, 0.600, 0.800, 1.000, 2.000, 4.000, 6.000, 8.000)
SCHEDULER_LABELS = ("model_name", "engine_type", "tp_rank", "pp_rank", "moe_ep_rank")
TOKENIZER_LABELS = ("model_name", "engine_type")
# (attribute, name, HELP) of the scheduler gauges the sim sets, as metrics_collector.py:364-545 has them.
GAUGES = (
    ("num_running_reqs", "sglang:num_running_reqs", "The number of running requests."),
    ("num_queue_reqs", "sglang:num_queue_reqs", "The number of requests in the waiting queue."),
    ("gen_throughput", "sglang:gen_throughput", "The generation throughput (token/s)."),
    ("cache_hit_rate", "sglang:cache_hit_rate", "The prefix cache hit rate."),
    ("token_usage", "sglang:token_usage", "The token usage."),
    ("num_used_tokens", "sglang:num_used_tokens", "The number of used tokens."),
    ("spec_accept_length", "sglang:spec_accept_length",
     "Mean acceptance length of speculative decoding (accepted drafts + bonus token per forward)."),
    ("spec_accept_rate", "sglang:spec_accept_rate",
     "Speculative acceptance rate (`accepted drafts / proposed drafts` in batch)."),
    ("spec_num_steps", "sglang:spec_num_steps", "Currently active speculative_num_steps."),
    ("spec_num_draft_tokens", "sglang:spec_num_draft_tokens",
     "Currently active speculative_num_draft_tokens (decouples from steps under topk>1)."),
)


class SimMetrics:
    """The server's metrics registry; the engine calls these as SGLang's scheduler and tokenizer would."""

    def __init__(self, model_name: str, tp_ranks: list[int], spec_steps: int, spec_draft_tokens: int) -> None:
        from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

        try:  # SGLang's multiprocess exposition has no `_created` series (prometheus_client >= 0.17)
            from prometheus_client import disable_created_metrics

            disable_created_metrics()
        except ImportError:
            pass
        self.registry = CollectorRegistry()
        self.lock = threading.Lock()
        self.spec = (spec_steps, spec_draft_tokens)
        self.tokenizer = {"model_name": model_name, "engine_type": "unified"}
        self.ranks = [{**self.tokenizer, "tp_rank": str(r), "pp_rank": "0", "moe_ep_rank": "0"} for r in tp_ranks]
        reg = self.registry
        self.gauges = {attr: Gauge(name, doc, SCHEDULER_LABELS, registry=reg) for attr, name, doc in GAUGES}
        stream = (*TOKENIZER_LABELS, "is_streaming")
        self.prompt_tokens = Counter("sglang:prompt_tokens_total", "Number of prefill tokens processed.", stream,
                                     registry=reg)
        self.generation_tokens = Counter("sglang:generation_tokens_total", "Number of generation tokens processed.",
                                         stream, registry=reg)
        self.verify_calls = Counter("sglang:spec_verify_calls_total",
                                    "Number of speculative decoding verification calls.", TOKENIZER_LABELS,
                                    registry=reg)
        self.requests = Counter("sglang:num_requests_total", "Number of requests processed.", stream, registry=reg)
        self.ttft = Histogram("sglang:time_to_first_token_seconds", "Histogram of time to first token in seconds.",
                              stream, buckets=TTFT_BUCKETS, registry=reg)
        self.itl = Histogram("sglang:inter_token_latency_seconds", "Histogram of inter-token latency in seconds.",
                             TOKENIZER_LABELS, buckets=ITL_BUCKETS, registry=reg)
        self.e2e = Histogram("sglang:e2e_request_latency_seconds", "Histogram of End-to-end request latency in seconds",
                             stream, buckets=E2E_BUCKETS, registry=reg)
        self.scheduler(running=0, queued=0, tput=0.0, used=0, usage=0.0, accept=0.0, rate=0.0)

    # -- the scheduler's report (metrics_reporter.py report_decode_stats / _maybe_log_idle_metrics) ------

    def scheduler(self, *, running: int, queued: int, tput: float, used: int, usage: float,
                  accept: float | None = None, rate: float | None = None) -> None:
        """The gauges every exporting scheduler sets; accept/rate None keep the last window's values."""
        values: dict[str, Any] = {"num_running_reqs": running, "num_queue_reqs": queued, "gen_throughput": tput,
                                  "cache_hit_rate": 0.0, "token_usage": usage, "num_used_tokens": used}
        if accept is not None:
            on = self.spec[1] > 0
            values.update(spec_accept_length=accept if on else 0.0, spec_accept_rate=(rate or 0.0) if on else 0.0,
                          spec_num_steps=self.spec[0], spec_num_draft_tokens=self.spec[1])
        with self.lock:
            for labels in self.ranks:
                for attr, value in values.items():
                    self.gauges[attr].labels(**labels).set(float(value))

    # -- the tokenizer's, per request (observe_one_finished_request, observe_inter_token_latency) ---------

    def first_token(self, seconds: float, stream: bool) -> None:
        self.ttft.labels(**self.tokenizer, is_streaming=_flag(stream)).observe(seconds)

    def tokens(self, interval: float, n: int) -> None:
        """n tokens came `interval` s after the previous output: SGLang observes interval/n, n times."""
        if n <= 0:
            return
        h = self.itl.labels(**self.tokenizer)
        for _ in range(n):
            h.observe(interval / n)

    def finished(self, prompt: int, generated: int, verify_ct: int, e2e: float, stream: bool) -> None:
        labels = {**self.tokenizer, "is_streaming": _flag(stream)}
        self.prompt_tokens.labels(**labels).inc(prompt)
        self.generation_tokens.labels(**labels).inc(generated)
        if verify_ct > 0:
            self.verify_calls.labels(**self.tokenizer).inc(verify_ct)
        self.requests.labels(**labels).inc()
        self.e2e.labels(**labels).observe(e2e)

    def exposition(self) -> bytes:
        from prometheus_client import generate_latest

        with self.lock:
            return generate_latest(self.registry)


def _flag(stream: bool) -> str:
    return "true" if stream else "false"
