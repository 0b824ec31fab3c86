"""SGLang's Prometheus `/metrics` (launched with `--enable-metrics`): fetched bounded, parsed with
prometheus_client's text parser, reduced to the figures the console watches.

Names and labels are SGLang 0.5.23's (srt/observability/metrics_collector.py; docs/upstream.md). The
scheduler's gauges carry `tp_rank`, `pp_rank`, `moe_ep_rank`, `engine_type`, `model_name` and, with data
parallelism, `dp_rank`; by default only attention-TP rank 0 of each DP group exports them
(`--enable-metrics-for-all-schedulers`: every TP rank). Older servers label by `model_name` alone (or
`name`): one unnamed rank. The tokenizer's counters and histograms carry no rank.

prometheus_client is imported inside the functions: `import prometheus_client` costs ~60 ms (its
exposition module pulls in http.server and ssl), which no other command pays.
"""

from __future__ import annotations

import contextlib
import time
from typing import NamedTuple

from eagle_console import httpnet
from eagle_console._httpx import httpx

# Scheduler gauges (metrics_collector.py SchedulerMetricsCollector, 0.5.23 lines 364-545): our key → name.
GAUGES = {
    "accept_length": "sglang:spec_accept_length",  # accepted drafts + bonus token per verify, last log window
    "accept_rate": "sglang:spec_accept_rate",  # accepted drafts / proposed drafts (bonus excluded)
    "gen_throughput": "sglang:gen_throughput",  # decode tok/s of the last log window; 0 once idle
    "running_reqs": "sglang:num_running_reqs",
    "queue_reqs": "sglang:num_queue_reqs",
    "token_usage": "sglang:token_usage",  # KV cache pool in use, 0..1
    "cache_hit_rate": "sglang:cache_hit_rate",
    "num_steps": "sglang:spec_num_steps",
    "num_draft_tokens": "sglang:spec_num_draft_tokens",  # the verify width: accept length's ceiling
}
_GAUGE_KEY = {name: key for key, name in GAUGES.items()}
# Tokenizer counters (TokenizerMetricsCollector, lines 1855-1945), summed over their labels (is_streaming).
COUNTERS = {
    "generation_tokens": "sglang:generation_tokens_total",
    "prompt_tokens": "sglang:prompt_tokens_total",
    "requests": "sglang:num_requests_total",
    "verify_calls": "sglang:spec_verify_calls_total",  # += each finished request's spec_verify_ct
}
_COUNTER_KEY = {name: key for key, name in COUNTERS.items()}
# Tokenizer histograms (lines 2039-2072), buckets summed over their labels.
HISTOGRAMS = {"ttft": "sglang:time_to_first_token_seconds", "itl": "sglang:inter_token_latency_seconds"}
_HIST_BY_BUCKET = {f"{name}_bucket": key for key, name in HISTOGRAMS.items()}
_HIST_BY_SUM = {f"{name}_sum": key for key, name in HISTOGRAMS.items()}
_HIST_BY_COUNT = {f"{name}_count": key for key, name in HISTOGRAMS.items()}

TIMEOUT_S = 2.0  # the whole scrape: connect, headers and body
MAX_BYTES = 4 << 20  # a TP8 server with every scheduler exporting is ~200 KB; a body past this is refused


class MetricsError(Exception):
    """`/metrics` could not be read or is not Prometheus text; the message says which and what to do."""


class MetricsOff(MetricsError):
    """The server answered 404: it runs without --enable-metrics, and will until it is started again."""


class Rank(NamedTuple):
    """Which scheduler a gauge series is from (None: the label is absent, as on old servers)."""

    dp: str | None
    tp: str | None
    pp: str | None

    def label(self) -> str:
        """`tp0`, `dp1·tp2`, `tp0·pp1`: pipeline stage 0 goes unsaid; `all` for a server without rank labels."""
        parts = [f"{k}{v}" for k, v in (("dp", self.dp), ("tp", self.tp), ("pp", self.pp))
                 if v is not None and not (k == "pp" and v == "0")]
        return "·".join(parts) or "all"


class Histogram(NamedTuple):
    buckets: tuple[tuple[float, float], ...]  # (upper bound, cumulative count), ascending, +Inf last
    count: float
    total: float


class Scrape(NamedTuple):
    """One reading of `/metrics`."""

    at: float  # wall clock (time.time())
    t: float  # time.monotonic(), for rates
    ranks: dict[Rank, dict[str, float]]  # scheduler gauges per rank (keys of GAUGES)
    counters: dict[str, float]  # keys of COUNTERS present on the server
    histograms: dict[str, Histogram]  # keys of HISTOGRAMS present on the server


def metrics_url(base_url: str) -> str:
    return base_url.rstrip("/") + "/metrics"


def client(url: str, timeout_s: float = TIMEOUT_S) -> httpx.Client:
    """A client to keep for repeated scrapes of one server: making one costs ~20 ms of CPU (its TLS
    context), more than the scrape itself; a kept one also keeps its connection."""
    return httpnet.client(url, timeout_s)


def fetch(url: str, timeout_s: float = TIMEOUT_S, max_bytes: int = MAX_BYTES,
          using: httpx.Client | None = None) -> str:
    """The text at `url`, or MetricsError. The loopback rule of every probe (httpnet: no proxy for
    127.0.0.1, no redirects), one deadline for the whole request, and at most `max_bytes` of body.
    `using`: a client from `client()` (else one is made and closed)."""
    deadline = time.monotonic() + timeout_s
    said = httpnet.shown_url(url)
    try:
        with contextlib.nullcontext(using) if using is not None else httpnet.client(url, timeout_s) as c:
            # identity: the size cap counts what the server sends, and no CPU goes to inflating it
            with c.stream("GET", url, headers={"Accept-Encoding": "identity"}, timeout=timeout_s) as resp:
                if resp.status_code == 404:
                    raise MetricsOff(f"{said}: 404: the server runs without --enable-metrics (add it to the "
                                       "launch flags: SGLang serves /metrics only then)")
                if resp.status_code != 200:
                    raise MetricsError(f"{said}: HTTP {resp.status_code}")
                body = bytearray()
                for chunk in resp.iter_bytes():
                    body += chunk
                    if len(body) > max_bytes:
                        raise MetricsError(f"{said}: more than {max_bytes >> 20} MiB: not read")
                    if time.monotonic() > deadline:
                        raise MetricsError(f"{said}: no complete answer within {timeout_s:g} s")
    except httpx.TimeoutException:
        raise MetricsError(f"{said}: no answer within {timeout_s:g} s") from None
    except (httpx.HTTPError, OSError, ValueError) as exc:
        raise MetricsError(f"{said}: unreachable ({type(exc).__name__}: {exc})") from None
    try:
        return body.decode("utf-8")
    except UnicodeDecodeError:
        raise MetricsError(f"{said}: not UTF-8 text") from None


def _rank(labels: dict[str, str]) -> Rank:
    return Rank(labels.get("dp_rank"), labels.get("tp_rank"), labels.get("pp_rank"))


def _le(text: str) -> float:
    return float("inf") if text in ("+Inf", "Inf", "inf") else float(text)


def parse(text: str, at: float | None = None, t: float | None = None) -> Scrape:
    """Prometheus text → Scrape (only SGLang's series are kept); MetricsError when it is not Prometheus text."""
    from prometheus_client.parser import text_string_to_metric_families

    ranks: dict[Rank, dict[str, float]] = {}
    counters: dict[str, float] = {}
    buckets: dict[str, dict[float, float]] = {}
    sums: dict[str, float] = {}
    counts: dict[str, float] = {}
    try:
        for family in text_string_to_metric_families(text):
            if not family.name.startswith("sglang:"):
                continue
            for s in family.samples:
                name, value = s.name, float(s.value)
                if name in _GAUGE_KEY:
                    # with --enable-priority-scheduling a queue gauge is the total under priority="" and one
                    # series per priority beside it (0.5.23 metrics_collector.py:1389-1390, :1417-1429)
                    if s.labels.get("priority"):
                        continue
                    ranks.setdefault(_rank(s.labels), {})[_GAUGE_KEY[name]] = value
                elif name in _COUNTER_KEY:
                    key = _COUNTER_KEY[name]
                    counters[key] = counters.get(key, 0.0) + value
                elif name in _HIST_BY_BUCKET:
                    per = buckets.setdefault(_HIST_BY_BUCKET[name], {})
                    le = _le(s.labels.get("le", "+Inf"))
                    per[le] = per.get(le, 0.0) + value
                elif name in _HIST_BY_SUM:
                    sums[_HIST_BY_SUM[name]] = sums.get(_HIST_BY_SUM[name], 0.0) + value
                elif name in _HIST_BY_COUNT:
                    counts[_HIST_BY_COUNT[name]] = counts.get(_HIST_BY_COUNT[name], 0.0) + value
    except (ValueError, TypeError, IndexError, KeyError) as exc:  # what the parser raises on a bad line
        raise MetricsError(f"not Prometheus text: {exc}") from None
    hists = {key: Histogram(tuple(sorted(per.items())), counts.get(key, max(per.values(), default=0.0)),
                            sums.get(key, 0.0)) for key, per in buckets.items()}
    return Scrape(time.time() if at is None else at, time.monotonic() if t is None else t, ranks, counters, hists)


def scrape(base_url: str, timeout_s: float = TIMEOUT_S, max_bytes: int = MAX_BYTES,
           using: httpx.Client | None = None) -> Scrape:
    at, t = time.time(), time.monotonic()
    return parse(fetch(metrics_url(base_url), timeout_s, max_bytes, using), at, t)


# ---- the figures ---------------------------------------------------------------------------------------


class Figures(NamedTuple):
    """The server as a whole from one scrape. DP groups add up (each runs its own batch); within a group
    the lowest TP rank speaks for it (with every scheduler exporting, TP ranks repeat the same batch)."""

    accept_length: float | None  # None: no speculative decoding on this server (or no such gauge)
    accept_rate: float | None
    gen_throughput: float | None
    running_reqs: int | None
    queue_reqs: int | None
    token_usage: float | None  # the fullest group's
    num_draft_tokens: int | None
    speculative: bool


def _groups(ranks: dict[Rank, dict[str, float]]) -> list[dict[str, float]]:
    """One gauge set per DP group: the lowest TP rank's (numerically; absent labels first)."""

    def order(rank: Rank) -> tuple:
        return tuple(int(v) if v is not None and v.isdigit() else -1 for v in (rank.dp, rank.pp, rank.tp))

    chosen: dict[tuple[str | None, str | None], tuple[tuple, dict[str, float]]] = {}
    for rank, gauges in ranks.items():
        key, o = (rank.dp, rank.pp), order(rank)
        if key not in chosen or o < chosen[key][0]:
            chosen[key] = (o, gauges)
    return [g for _o, g in sorted(chosen.values(), key=lambda item: item[0])]


def figures(s: Scrape) -> Figures:
    groups = _groups(s.ranks)

    def values(key: str) -> list[float]:
        return [g[key] for g in groups if key in g]

    drafts = values("num_draft_tokens")
    accepts = values("accept_length")
    # SGLang sets spec_accept_length 0 without speculation (metrics_reporter.py:967-971) and the draft-token
    # gauge to the verify width with it; either says which.
    speculative = any(v > 0 for v in accepts) or any(v > 0 for v in drafts) or s.counters.get("verify_calls", 0) > 0
    live = [v for v in accepts if v > 0]

    def total(key: str) -> float | None:
        vs = values(key)
        return sum(vs) if vs else None

    running, queued = total("running_reqs"), total("queue_reqs")
    rates = values("accept_rate")
    return Figures(
        # 0 before the first decode log: nothing measured yet
        accept_length=sum(live) / len(live) if speculative and live else None,
        accept_rate=(sum(rates) / len(rates) if rates else None) if speculative else None,
        gen_throughput=total("gen_throughput"),
        running_reqs=None if running is None else int(running),
        queue_reqs=None if queued is None else int(queued),
        token_usage=max(values("token_usage"), default=None),
        num_draft_tokens=int(max(drafts)) if drafts and max(drafts) > 0 else None,
        speculative=speculative,
    )


def quantile(q: float, now: Histogram, before: Histogram | None = None) -> float | None:
    """The q-quantile of what was observed between `before` and `now` (since the server started when
    `before` is None), interpolated inside its bucket as Prometheus' histogram_quantile does; None when
    nothing was observed. A counter that went down (the server restarted) counts from zero."""
    prior = dict(before.buckets) if before is not None else {}
    reset = before is not None and now.count < before.count
    cum = [(le, c - (0.0 if reset else prior.get(le, 0.0))) for le, c in now.buckets]
    if not cum or cum[-1][1] <= 0:
        return None
    rank = q * cum[-1][1]
    lower, below = 0.0, 0.0
    for le, c in cum:
        if c >= rank:
            if le == float("inf"):
                return lower  # beyond the last finite bucket: its bound is all that is known
            if c == below:
                return le
            return lower + (le - lower) * (rank - below) / (c - below)
        lower, below = le, c
    return None
