"""What a recorded result is, where its name alone does not say, and which `plan.baseline` figure it is
measured against: the same words on every face (Results pane, the benchmark's log, `export`, `--json`).

Issue 32: the Results headline put end-to-end `tok_s` against the 82 tok/s baseline (+13.1%) while the same
run's log and `speedup` compared decode tok/s with it (1.16x, +16%): two numbers, one unlabelled, that
seemed to disagree. The baseline's `tok_s` is a decode speed (`sglang.bench` compares decode tok/s with it,
docs/upstream.md "Benchmark"), so a step that recorded `decode_tok_s` is measured by that figure.
"""

from __future__ import annotations

from collections.abc import Collection

# name -> (short label, for a headline or a table cell; long label, for exports and --json)
LABELS: dict[str, tuple[str, str]] = {
    "tok_s": ("end-to-end", "end-to-end output tok/s: tokens / request wall time, prefill included"),
    "decode_tok_s": ("decode", "decode tok/s: first to last token of each request"),
    "speedup": ("decode ÷ baseline", "decode tok/s ÷ the baseline tok_s, a decode speed"),
    "baseline_tok_s": ("decode baseline", "the baseline it was compared with, a decode tok/s"),
}
DECODE_BASELINE = "tok_s"  # the plan.baseline key that holds a decode speed


def short_label(name: str) -> str | None:
    return LABELS[name][0] if name in LABELS else None


def long_label(name: str) -> str | None:
    return LABELS[name][1] if name in LABELS else None


def baseline_key(name: str, step_names: Collection[str]) -> str | None:
    """The `plan.baseline` key result `name` is compared with, given the names its step recorded: its own
    name, except that decode_tok_s takes the baseline's tok_s and an end-to-end tok_s recorded beside a
    decode_tok_s takes none (it is not the figure the baseline is)."""
    if name == "decode_tok_s":
        return DECODE_BASELINE
    if name == DECODE_BASELINE and "decode_tok_s" in step_names:
        return None
    return name


def measured_by(key: str, names: Collection[str]) -> str:
    """The result that baseline `key` is measured by, among `names`: decode_tok_s for tok_s when there is one."""
    return "decode_tok_s" if key == DECODE_BASELINE and "decode_tok_s" in names else key
