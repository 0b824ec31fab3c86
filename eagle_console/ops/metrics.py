"""The followed service's live figures, once for both faces: which service and URL, a window of
`/metrics` readings, the figures, rates and quantiles over it, and the alarms (parse/alarms.py).

`metrics PLAN [--watch]` and the console's Metrics tab each keep one `MetricsWatch` and call `poll()` at
their refresh; the document `report()` gives is cli.md's `metrics --json` (plus `error`, `service`,
`window_s`, `ranks`, `num_draft_tokens`, `baseline_tok_s`). Blocking (HTTP): call it off the event loop.
"""

from __future__ import annotations

import shlex
import time
from collections import deque
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, NamedTuple
from urllib.parse import urlsplit

from eagle_console.parse import alarms
from eagle_console.sglang.metrics import Figures, MetricsError, MetricsOff, Scrape, figures, quantile

if TYPE_CHECKING:
    from eagle_console.journal import Journal
    from eagle_console.plan.model import Plan

WINDOW_S = 60.0  # rates and quantiles are over the readings of the last minute
KEEP = 600  # readings kept for the charts: 10 minutes at the console's 1 s refresh
# A server without --enable-metrics answers 404 until it is started again, and SGLang's uvicorn writes each
# ask as an access line in its log (`"GET /metrics HTTP/1.1" 404 Not Found`; SGLang 0.5.x logs them unless
# --uvicorn-access-log-exclude-prefixes says otherwise): asked at the console's 1 s refresh, the Server
# pane's own log was all our 404s. It is asked again this often, and at once for another server.
OFF_RETRY_S = 60.0
BASELINE_KEY = "tok_s"  # plan.baseline's single-stream decode figure (the 82 tok/s of the K2.5 runs)


class Target(NamedTuple):
    """What to scrape: the service's step, its base URL, and the schedulers its launch flags promise."""

    step: str | None
    url: str | None  # the server's origin (`http://127.0.0.1:30000`), None when the step names none
    expected_tp: frozenset[str] | None  # tp_rank labels that must export gauges; None: not known
    why_expected: str = ""
    problem: str | None = None  # why there is no URL


# ---- which service, which URL ----------------------------------------------------------------------------


def followed_step(plan: Plan, journal: Journal, step_id: str | None) -> str | None:
    """The service the Server pane follows (the selected service step, else the latest service run), else the
    plan's first service step."""
    from eagle_console.ops.logs import service_step

    found = service_step(plan, journal, step_id)
    if found is not None:
        return found
    return next((s.id for s in plan.steps() if s.service), None)


def service_problem(plan: Plan, step_id: str | None) -> str | None:
    """Why `step_id` cannot be a metrics target (no such step, not a service); None when it can (or is None:
    the followed service). The CLI's `--service` and the agent's `metrics` tool say the same."""
    if step_id is None:
        return None
    step = plan.step(step_id)
    if step is None:
        return f"no step {step_id} in {plan.path.name}"
    if not step.service:
        return f"step {step_id} is not a service (`service = true`, or sglang.server)"
    return None


def read_once(plan: Plan, journal: Journal, step_id: str | None) -> dict[str, Any]:
    """One reading of the service's `/metrics` (`step_id`, else the one the Server pane follows): the report
    `metrics --json` prints without --watch."""
    watch = MetricsWatch(plan, journal, step_id, follow_selection=step_id is None)
    try:
        return watch.poll()
    finally:
        watch.close()


def _origin(url: str) -> str | None:
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.netloc}" if parts.scheme in ("http", "https") and parts.netloc else None


def _flag(argv: Sequence[str], *names: str) -> str | None:
    """The value of the last of `names` in argv (`--flag V` or `--flag=V`); "" for a flag without value."""
    value = None
    for i, item in enumerate(argv):
        name, eq, rest = item.partition("=")
        if name in names:
            value = rest if eq else (argv[i + 1] if i + 1 < len(argv) and not argv[i + 1].startswith("--") else "")
    return value


def expected_ranks(tp: int, argv: Sequence[str], nnodes: int = 1) -> tuple[frozenset[str], str]:
    """The tp_rank labels whose schedulers export gauges at rank 0's /metrics (0.5.23
    metrics_collector.py:1360-1367): attention-TP rank 0 of each DP group, or every scheduler with
    --enable-metrics-for-all-schedulers; on several nodes only node 0's own (each node serves its own)."""
    local = max(1, tp // max(1, nnodes))
    if _flag(argv, "--enable-metrics-for-all-schedulers") is not None:
        return frozenset(str(r) for r in range(local)), f"--enable-metrics-for-all-schedulers with tp {tp}"
    dp_text = _flag(argv, "--dp-size", "--data-parallel-size", "--dp") or "1"
    dp = int(dp_text) if dp_text.isdigit() and int(dp_text) > 0 else 1
    # 0.5.23 names attention DP `--attn-dp-size` (fields/parallel.py:81-90); `--enable-dp-attention` with
    # `--dp-size` is the older, deprecated form (server_args.py:417-425)
    attn_text = _flag(argv, "--attn-dp-size", "--attention-data-parallel-size") or ""
    if attn_text.isdigit() and int(attn_text) > 1:
        dp, how = int(attn_text), "--attn-dp-size"
    elif _flag(argv, "--enable-dp-attention") is not None:
        how = "--enable-dp-attention"
    else:
        dp = 1
    if dp > 1 and tp % dp == 0:
        ranks = frozenset(str(g * (tp // dp)) for g in range(dp) if g * (tp // dp) < local)
        return ranks, f"{how} with tp {tp}, dp {dp}: attention-TP rank 0 of each DP group"
    return frozenset({"0"}), "TP rank 0 exports the scheduler's metrics"


def target(plan: Plan, step_id: str | None) -> Target:
    """The service step's URL and its expected ranks; `problem` says why there is no URL."""
    step = plan.step(step_id) if step_id else None
    if step is None:
        return Target(None, None, None, problem="no service step in the plan" if step_id is None
                      else f"no step {step_id} in the plan")
    url = _origin(step.ready.http) if step.ready and step.ready.http else None
    expected: frozenset[str] | None = None
    why = ""
    if step.uses == "sglang.server":
        args = dict(step.action.with_) if step.action else {}
        url = url or _server_origin(args)
        expected, why = _expected_from_with(args)
    elif step.action is not None and step.action.kind in ("shell", "argv"):
        argv = list(step.action.argv or ()) or _split(step.action.shell or "")
        tp_text = _flag(argv, "--tp-size", "--tensor-parallel-size", "--tp")
        if tp_text and tp_text.isdigit():
            expected, why = expected_ranks(int(tp_text), argv)
    if url is None:
        return Target(step.id, None, None,
                      problem=f"{step.id} names no URL: give it `ready = {{ http = \"http://HOST:PORT/health\" }}`")
    return Target(step.id, url, expected, why)


def _split(shell: str) -> list[str]:
    try:
        return shlex.split(shell)
    except ValueError:
        return shell.split()


def _server_origin(args: Mapping[str, Any]) -> str:
    host = str(args.get("host", "127.0.0.1"))
    if host in ("0.0.0.0", "::", ""):
        host = "127.0.0.1"
        if "nodes" in args:  # rank 0 serves the API, on the first node
            from eagle_console.engine.builtins.sglang_ranks import rank0_host

            host = rank0_host(dict(args), host)
    if ":" in host and not host.startswith("["):
        host = f"[{host}]"
    return f"http://{host}:{args.get('port', 30000)}"


def _expected_from_with(args: Mapping[str, Any]) -> tuple[frozenset[str] | None, str]:
    tp = args.get("tp", 1)
    if isinstance(tp, str) and tp.isdigit():
        tp = int(tp)
    if not isinstance(tp, int) or isinstance(tp, bool) or tp < 1:
        return None, ""
    extra = [str(a) for a in args.get("args", []) or []] if isinstance(args.get("args"), list) else []
    nodes = args.get("nodes")
    return expected_ranks(tp, extra, len(nodes) if isinstance(nodes, list) and nodes else 1)


# ---- the window of readings -------------------------------------------------------------------------------


class Reading(NamedTuple):
    at: float  # wall clock
    t: float  # monotonic
    scrape: Scrape | None
    figures: Figures | None
    error: str | None


def _q(now: Any, before: Any) -> dict[str, float | None]:
    if now is None:
        return {"p50": None, "p90": None}
    return {"p50": quantile(0.5, now, before), "p90": quantile(0.9, now, before)}


class MetricsWatch:
    """The readings of one service's `/metrics`, newest last; `poll()` adds one."""

    def __init__(self, plan: Plan, journal: Journal, step_id: str | None = None, *, follow_selection: bool = True,
                 hold_s: float = alarms.HOLD_S, window_s: float = WINDOW_S, keep: int = KEEP,
                 off_retry_s: float = OFF_RETRY_S) -> None:
        self.plan, self.journal = plan, journal
        self.off_retry_s = off_retry_s
        self._off: tuple[str, float, str] | None = None  # (url, not asked again before, what it said): a 404
        self.step_id = step_id  # the explicit --service step, or the console's selection
        self.follow_selection = follow_selection
        self.hold_s, self.window_s = hold_s, window_s
        self.readings: deque[Reading] = deque(maxlen=keep)
        self.target: Target = Target(None, None, None)
        self.seen_tp: set[str] = set()  # tp ranks seen exporting since the service was first read
        self._client: Any = None  # kept between polls (metrics.client: making one is the dearest part)
        self._last_text: tuple[str, Scrape] | None = None
        self.unchanged = False  # the last poll read the very text of the one before (an idle server)

    def close(self) -> None:
        if self._client is not None:
            self._client.close()
            self._client = None

    # -- reading ---------------------------------------------------------------------------------------

    def resolve(self) -> Target:
        step = (followed_step(self.plan, self.journal, self.step_id) if self.follow_selection
                else self.step_id)
        found = target(self.plan, step)
        if found.url != self.target.url or found.step != self.target.step:
            self.readings.clear()  # another server: its history is not this one's
            self.seen_tp.clear()
            self._last_text = None
            self._off = None
            self.close()
        self.target = found
        return found

    def poll(self, scrape_fn: Any = None) -> dict[str, Any]:
        """Read `/metrics` once (blocking, bounded by metrics.TIMEOUT_S) and return the report."""
        from eagle_console.sglang.metrics import client, fetch, metrics_url, parse

        tgt = self.resolve()
        at, t = time.time(), time.monotonic()
        if tgt.url is None:
            self.readings.append(Reading(at, t, None, None, tgt.problem))
            return self.report()
        if self._off is not None and self._off[0] == tgt.url and t < self._off[1]:
            self.readings.append(Reading(at, t, None, None, self._off[2]))  # not asked again: it stands
            return self.report()
        try:
            if scrape_fn is not None:
                s = scrape_fn(tgt.url)
            else:
                if self._client is None:
                    self._client = client(tgt.url)
                text = fetch(metrics_url(tgt.url), using=self._client)
                last = self._last_text
                # an idle server says the same thing every second: its reading again, not another parse
                self.unchanged = last is not None and last[0] == text
                s = last[1]._replace(at=at, t=t) if self.unchanged else parse(text, at, t)
                self._last_text = (text, s)
        except MetricsOff as exc:
            said = f"{exc}; not asked again for {self.off_retry_s:g} s (SGLang logs each ask)"
            self._off = (tgt.url, t + self.off_retry_s, said)
            self.readings.append(Reading(at, t, None, None, said))
            return self.report()
        except MetricsError as exc:
            self.readings.append(Reading(at, t, None, None, self._explain(str(exc))))
            return self.report()
        self.add(s)
        return self.report()

    def add(self, s: Scrape) -> None:
        self.readings.append(Reading(s.at, s.t, s, figures(s), None))
        self.seen_tp.update(r.tp for r in s.ranks if r.tp is not None)

    def _explain(self, error: str) -> str:
        """An unreachable server whose run is over is not running, which says more than a refused connection."""
        step = self.target.step
        if step is None or "unreachable" not in error:
            return error
        from eagle_console.ops.logs import live_service

        try:
            live = live_service(self.journal, step)
        except Exception:  # the journal is the poller's to report; the scrape's error stands
            return error
        return error if live is not None else f"{step} is not running ({error})"

    # -- what the readings say ------------------------------------------------------------------------

    def latest(self) -> Reading | None:
        return self.readings[-1] if self.readings else None

    def good(self) -> list[Reading]:
        return [r for r in self.readings if r.scrape is not None]

    def points(self) -> list[alarms.Point]:
        return [alarms.Point(r.t, r.figures.running_reqs or 0, r.figures.accept_length,
                             r.figures.gen_throughput, r.figures.token_usage)
                for r in self.readings if r.figures is not None]

    def _window_start(self, now: Reading) -> Reading | None:
        """The oldest good reading within the window before `now` (None: `now` is the first)."""
        for r in self.readings:
            if r.scrape is not None and r is not now and now.t - r.t <= self.window_s:
                return r
        return None

    @property
    def baseline_tok_s(self) -> float | None:
        value = self.plan.baseline.get(BASELINE_KEY)
        return float(value) if isinstance(value, (int, float)) and value > 0 else None

    def findings(self) -> list[dict[str, str]]:
        from eagle_console.findings import by_severity

        latest = self.latest()
        if latest is None or latest.scrape is None:
            return []
        found = alarms.alarms(self.points(), self.baseline_tok_s, self.hold_s)
        if not any(f.code == "ACCEPT_LENGTH_ONE" for f in found) and latest.figures and latest.figures.speculative:
            start = self._window_start(latest)
            c1 = latest.scrape.counters
            c0 = start.scrape.counters if start is not None and start.scrape is not None else {}
            if c0 and c1.get("verify_calls", 0) - c0.get("verify_calls", 0) < alarms.MIN_VERIFY:
                # fewer than none: the server restarted, count from zero; too few in the window to say (the
                # second reading, a quiet minute): the counts since the start say it, as the first reading
                # did (judging none made a raised alarm blink out meanwhile)
                c0 = {}
            over = f"in the last {latest.t - start.t:.0f} s" if c0 and start is not None else "since the server started"
            counted = alarms.accept_length_one_counted(
                c1.get("generation_tokens", 0) - c0.get("generation_tokens", 0),
                c1.get("requests", 0) - c0.get("requests", 0),
                c1.get("verify_calls", 0) - c0.get("verify_calls", 0), over)
            if counted is not None:
                found.append(counted)
        present = {r.tp for r in latest.scrape.ranks if r.tp is not None}
        if present or self.seen_tp:  # an old server without rank labels: nothing to compare
            expected = set(self.target.expected_tp or ())
            missing = alarms.missing_ranks({f"tp{r}" for r in expected}, {f"tp{r}" for r in present},
                                           self.target.why_expected)
            if missing is None:
                missing = alarms.missing_ranks({f"tp{r}" for r in self.seen_tp}, {f"tp{r}" for r in present},
                                               "seen exporting earlier")
            if missing is not None:
                found.append(missing)
        return [f.to_json() for f in by_severity(found)]

    def report(self) -> dict[str, Any]:
        """cli.md's `metrics --json` document for the latest reading."""
        latest = self.latest()
        tgt = self.target
        doc: dict[str, Any] = {"url": tgt.url and tgt.url + "/metrics", "service": tgt.step,
                               "at": latest.at if latest else None, "error": latest.error if latest else None}
        f = latest.figures if latest is not None else None
        doc.update(accept_length=f and f.accept_length, accept_rate=f and f.accept_rate,
                   gen_throughput=f and f.gen_throughput, running_reqs=f and f.running_reqs,
                   queue_reqs=f and f.queue_reqs, token_usage=f and f.token_usage,
                   num_draft_tokens=f and f.num_draft_tokens)
        start = self._window_start(latest) if latest is not None and latest.scrape is not None else None
        now_s = latest.scrape if latest is not None else None
        before = start.scrape if start is not None else None
        for key, name in (("ttft", "ttft_s"), ("itl", "itl_s")):
            doc[name] = _q(now_s.histograms.get(key) if now_s else None,
                           before.histograms.get(key) if before else None)
        doc["window_s"] = round(latest.t - start.t, 1) if latest is not None and start is not None else None
        doc["ranks"] = sorted((r.label() for r in now_s.ranks), key=_rank_order) if now_s else []
        doc["baseline_tok_s"] = self.baseline_tok_s
        doc["findings"] = self.findings()
        return doc


def _rank_order(label: str) -> tuple:
    import re

    return tuple(int(n) for n in re.findall(r"\d+", label)), label


def describe(doc: Mapping[str, Any]) -> str:
    """One line for a person: `decode 93.5 tok/s (+14.0% vs 82) · accept 2.63/3 · running 1 · queued 0 · …`."""
    if doc.get("error"):
        return f"{doc.get('service') or '—'}: {doc['error']}"
    parts = []
    tput, base = doc.get("gen_throughput"), doc.get("baseline_tok_s")
    if tput is not None and doc.get("running_reqs") == 0 and not tput:
        parts.append("idle")  # SGLang publishes 0 tok/s once idle: no figure to hold against the baseline
    elif tput is not None:
        vs = f" ({(tput - base) / base * 100:+.1f}% vs {base:g})" if base else ""
        parts.append(f"decode {tput:.1f} tok/s{vs}")
    accept, ceiling = doc.get("accept_length"), doc.get("num_draft_tokens")
    if accept is not None or ceiling:  # speculative: the accept length once a decode window was logged
        parts.append(f"accept {'—' if accept is None else format(accept, '.2f')}" + (f"/{ceiling}" if ceiling else ""))
    elif tput is not None:
        parts.append("no speculative decoding")
    for key, word in (("running_reqs", "running"), ("queue_reqs", "queued")):
        if doc.get(key) is not None:
            parts.append(f"{word} {doc[key]}")
    if doc.get("token_usage") is not None:
        parts.append(f"KV {doc['token_usage']:.2f}")
    for key, word in (("ttft_s", "TTFT"), ("itl_s", "ITL")):
        q = doc.get(key) or {}
        if q.get("p50") is not None:
            parts.append(f"{word} p50 {_ms(q['p50'])} p90 {_ms(q.get('p90'))}")
    return " · ".join(parts) or "no SGLang figures in /metrics yet"


def _ms(seconds: float | None) -> str:
    if seconds is None:
        return "—"
    return f"{seconds * 1000:.0f} ms" if seconds < 10 else f"{seconds:.1f} s"
