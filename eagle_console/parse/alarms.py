"""Alarms over a running server's figures: what costs days when nobody looks.

One set of rules for both sources of figures: `/metrics` scrapes (the Metrics tab, `metrics`) and the
server log's `Decode batch` lines (`server-log`, the Server pane). Each alarm is a Finding whose message
says what was seen and what to check. Codes (cli.md): ACCEPT_LENGTH_ONE, BELOW_BASELINE, TOKEN_USAGE_HIGH,
RANK_METRICS_MISSING.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import NamedTuple

from eagle_console.findings import Finding

HOLD_S = 10.0  # seconds of decoding an alarm's condition must hold before it is raised
ONE = 1.05  # an accept length at or under this: nothing of the drafter's is accepted
USAGE_HIGH = 0.95  # KV cache pool this full while requests run: SGLang starts retracting
MAX_GAP_S = 5.0  # two readings further apart than this count for this much of the hold
MIN_VERIFY = 64  # verify steps the request counters need before their accept length is believed


class Point(NamedTuple):
    """The server at one moment, from a scrape or a decode log line."""

    t: float  # seconds (monotonic for scrapes, the log's clock for log lines)
    running: int
    accept_length: float | None  # None: no speculative decoding (or not measured yet)
    gen_throughput: float | None
    token_usage: float | None


def held_s(points: Sequence[Point], holds) -> tuple[float, list[Point]]:
    """How long `holds(point)` has held while requests ran, counted back from the newest reading: the
    seconds between consecutive readings that both ran requests and both held (an idle reading in between
    breaks the pair, a reading that ran requests and did not hold ends the count), and those readings."""
    total, seen, later = 0.0, [], None
    for p in reversed(points):
        if p.running <= 0:
            later = None
            continue
        if not holds(p):
            break
        if later is not None:
            total += min(later.t - p.t, MAX_GAP_S)
        seen.append(p)
        later = p
    return total, seen


CHECK_DRAFTER = ("check: --speculative-algorithm EAGLE3 for an EAGLE-3 drafter (EAGLE loads it as EAGLE-2 and "
                 "accepts nothing: sglang PR #21272); the drafter's d2t/t2d against the target's vocabulary "
                 "(eagle-console drafter check DIR --target MODEL); its aux hidden-state layer ids against the "
                 "target's layer numbering")


def accept_length_one(points: Sequence[Point], hold_s: float = HOLD_S) -> Finding | None:
    """The drafter is loaded but never accepted: accept length ≈ 1.0 for `hold_s` of decoding."""
    spec = [p for p in points if p.accept_length is not None or p.running <= 0]
    seconds, seen = held_s(spec, lambda p: p.accept_length is not None and p.accept_length <= ONE)
    if seconds < hold_s or len(seen) < 3:
        return None
    latest = seen[0]
    return Finding("error", "ACCEPT_LENGTH_ONE",
                   f"accept length {latest.accept_length:.2f} for {seconds:.0f} s while requests ran: the "
                   f"drafter is loaded but none of its tokens are accepted — {CHECK_DRAFTER}")


def accept_length_one_counted(generated: float, requests: float, verify_calls: float,
                              over: str = "since the server started") -> Finding | None:
    """The same alarm from the request counters: every request's tokens but its first (prefill's) come
    from verify steps, so (generated - requests) / verify steps is the accept length of what finished."""
    if verify_calls < MIN_VERIFY:
        return None
    accept = (generated - requests) / verify_calls
    if accept > ONE:
        return None
    return Finding("error", "ACCEPT_LENGTH_ONE",
                   f"accept length {accept:.2f} over {verify_calls:.0f} verify steps {over}: the drafter is "
                   f"loaded but none of its tokens are accepted — {CHECK_DRAFTER}")


def below_baseline(points: Sequence[Point], baseline_tok_s: float | None,
                   hold_s: float = HOLD_S) -> Finding | None:
    """Speculative decoding on, and decode slower than the plan's baseline for `hold_s` of decoding."""
    if not baseline_tok_s:
        return None
    spec = [p for p in points if p.accept_length is not None or p.running <= 0]
    seconds, seen = held_s(spec, lambda p: p.accept_length is not None and p.gen_throughput is not None
                           and 0 < p.gen_throughput < baseline_tok_s)
    if seconds < hold_s or len(seen) < 3:
        return None
    tputs = sorted(p.gen_throughput or 0.0 for p in seen)
    median = tputs[len(tputs) // 2]
    accepts = [p.accept_length for p in seen if p.accept_length is not None]
    accept = sum(accepts) / len(accepts) if accepts else 0.0
    batch = "" if all(p.running == 1 for p in seen) else " (all running requests together)"
    return Finding("warning", "BELOW_BASELINE",
                   f"decode {median:.1f} tok/s{batch} for {seconds:.0f} s, below the {baseline_tok_s:g} tok/s "
                   f"baseline with speculative decoding on (accept length {accept:.2f}): the drafter costs more "
                   "than it gives — check the accept length first, then fewer draft steps "
                   "(speculative num_steps / num_draft_tokens), CUDA graphs on, the NCCL settings")


def token_usage_high(points: Sequence[Point]) -> Finding | None:
    """The KV cache pool nearly full while requests run: retractions come next."""
    latest = next((p for p in reversed(points) if p.token_usage is not None), None)
    if latest is None or latest.running <= 0 or latest.token_usage is None or latest.token_usage < USAGE_HIGH:
        return None
    return Finding("warning", "TOKEN_USAGE_HIGH",
                   f"token usage {latest.token_usage:.2f} with {latest.running} requests running: the KV cache "
                   "is nearly full and SGLang retracts requests next (\"KV cache pool is full. Retract "
                   "requests\") — check --max-running-requests, --mem-fraction-static and the requests' lengths "
                   "(--context-length)")


def missing_ranks(expected: Iterable[str], present: Iterable[str], why: str) -> Finding | None:
    """Schedulers whose gauges are not in `/metrics`: `expected` by label (Rank.label), `why` says why
    they are expected (the launch flags, or seen earlier)."""
    gone = sorted(set(expected) - set(present))
    if not gone:
        return None
    return Finding("warning", "RANK_METRICS_MISSING",
                   f"no scheduler metrics from {', '.join(gone)} ({why}): a scheduler that died or hangs stops "
                   "exporting — check the Server log for its traceback; on several nodes each node serves its "
                   "own ranks' metrics on its own host:port")


def alarms(points: Sequence[Point], baseline_tok_s: float | None, hold_s: float = HOLD_S) -> list[Finding]:
    """The alarms the figures alone can raise (ranks and counters are the metrics reader's)."""
    found = [accept_length_one(points, hold_s), below_baseline(points, baseline_tok_s, hold_s),
             token_usage_high(points)]
    return [f for f in found if f is not None]
