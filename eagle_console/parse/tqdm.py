"""tqdm progress lines and the extraction job's JSON summary, from raw log text.

tqdm redraws with `\\r`, so a log holds many updates on one physical line; the last one wins. Handles
`desc: 42%|████▎     | 4200/10000 [47:01<1:04:56, 1.49it/s, postfix]`, the `s/it` form for slow loops,
unit-scaled counts and rates (`4.20k/10.0k`, `1.49kit/s`: tqdm's `format_sizeof` prefixes k M G T P E Z Y,
`K` in old releases), `unit_divisor=1024` where the unit says so (`iB`: `12.3MiB/s`), the no-total form
`4200it [47:01, 1.49it/s]`, and the plain-text `bar_format` SGLang and vLLM use for weight loading:
`Loading safetensors checkpoint shards:  45% Completed | 29/64 [12:03<14:33, 24.95s/it]`.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

_NUM = r"\d+(?:\.\d+)?[kKMGTPEZY]?"
# `42%|████▎     | 4200/10000` or, with SGLang's/vLLM's text bar_format, `45% Completed | 29/64`.
_BAR = re.compile(
    r"(?:(?P<desc>[^\r\n|]*?):\s*)?(?P<pct>\d{1,3})%(?:\|(?P<bar>[^|\r\n]*)\||\s+Completed\s+\|)\s*"
    rf"(?P<n>{_NUM})/(?P<total>{_NUM})\s*"
    r"\[(?P<elapsed>[\d:]+)<(?P<remaining>[\d:?]+),\s*(?P<rate>[\d.]+|\?)\s*(?P<unit>[^\],\s]*)"
    r"(?:,\s*(?P<postfix>[^\]\r\n]*))?\]"
)
_NO_TOTAL = re.compile(
    rf"(?:(?P<desc>[^\r\n|]*?):\s*)?(?P<n>{_NUM})(?P<unit0>[A-Za-z]*)\s*"
    r"\[(?P<elapsed>[\d:]+),\s*(?P<rate>[\d.]+|\?)\s*(?P<unit>[^\],\s]*)(?:,\s*(?P<postfix>[^\]\r\n]*))?\]"
)
# format_sizeof's prefixes, each `unit_divisor` times the one before (`K` is tqdm < 4.2x's spelling of `k`).
_PREFIXES = "kMGTPEZY"


@dataclass(frozen=True)
class Progress:
    n: int
    total: int | None
    rate_per_s: float | None  # items per second (an `s/it` rate is inverted)
    elapsed_s: float
    remaining_s: float | None
    desc: str | None = None
    postfix: str | None = None

    @property
    def fraction(self) -> float | None:
        return self.n / self.total if self.total else None


def _divisor(unit: str) -> int:
    """1024 when the unit says so (`iB`, as tqdm's docs pass `unit="iB", unit_divisor=1024`), else 1000."""
    return 1024 if re.match(r"[kKMGTPEZY]?iB", unit) else 1000


def _scaled(value: str, prefix: str, divisor: int) -> float:
    if not prefix:
        return float(value)
    return float(value) * divisor ** (_PREFIXES.index(prefix.replace("K", "k")) + 1)


def _count(text: str, divisor: int = 1000) -> int:
    if text[-1] in _PREFIXES + "K":
        return int(round(_scaled(text[:-1], text[-1], divisor)))
    return int(float(text))


def parse_clock(text: str) -> float | None:
    """`47:01` / `1:04:56` / `1 day, 2:03:04`-less tqdm clocks to seconds; `?` → None."""
    if not text or "?" in text:
        return None
    total = 0.0
    for part in text.split(":"):
        if not part.isdigit():
            return None
        total = total * 60 + int(part)
    return total


def _rate(value: str, unit: str) -> float | None:
    """`1.49` + `kit/s` → 1490.0; `2.21` + `s/it` → 1/2.21; `12.3` + `MiB/s` → 12.3 × 1024²."""
    if value == "?":
        return None
    prefix = ""
    if len(unit) > 1 and unit[0] in _PREFIXES + "K" and not unit.startswith("s/"):
        prefix, unit = unit[0], unit[1:]
    v = _scaled(value, prefix, _divisor(unit))
    if unit.startswith("s/"):  # "2.21s/it": seconds per item
        return 1.0 / v if v > 0 else None
    return v


def parse_progress(line: str) -> Progress | None:
    """The last tqdm update in `line` (which may hold several `\\r`-separated redraws), or None."""
    for chunk in reversed(re.split(r"[\r\n]", line)):
        matches = list(_BAR.finditer(chunk))
        if matches:
            m = matches[-1]
            div = _divisor(m["unit"])
            return Progress(
                n=_count(m["n"], div), total=_count(m["total"], div), rate_per_s=_rate(m["rate"], m["unit"]),
                elapsed_s=parse_clock(m["elapsed"]) or 0.0, remaining_s=parse_clock(m["remaining"]),
                desc=(m["desc"] or "").strip() or None, postfix=(m["postfix"] or "").strip() or None,
            )
        matches = list(_NO_TOTAL.finditer(chunk))
        if matches:
            m = matches[-1]
            return Progress(
                n=_count(m["n"], _divisor(m["unit0"] or m["unit"])), total=None,
                rate_per_s=_rate(m["rate"], m["unit"]),
                elapsed_s=parse_clock(m["elapsed"]) or 0.0, remaining_s=None,
                desc=(m["desc"] or "").strip() or None, postfix=(m["postfix"] or "").strip() or None,
            )
    return None


def last_progress(text: str) -> Progress | None:
    """The most recent tqdm update anywhere in `text`."""
    for chunk in reversed(re.split(r"[\r\n]", text)):
        if "[" in chunk:
            p = parse_progress(chunk)
            if p is not None:
                return p
    return None


_SUMMARY_KEY = re.compile(r"[\"']?total_samples[\"']?\s*[:=]")


def parse_summary(text: str) -> dict[str, Any] | None:
    """The last JSON object in `text` holding `total_samples` (one line or pretty-printed), or None.

    A `key: value` / `key=value` summary without JSON is read too, for the two keys that matter.
    """
    decoder = json.JSONDecoder()
    for m in reversed(list(_SUMMARY_KEY.finditer(text))):
        start = text.rfind("{", 0, m.start())
        while start != -1:
            try:
                obj, _ = decoder.raw_decode(text, start)
            except ValueError:
                start = text.rfind("{", 0, start)
                continue
            if isinstance(obj, dict) and "total_samples" in obj:
                return obj
            start = text.rfind("{", 0, start)
        line_start = text.rfind("\n", 0, m.start()) + 1
        line_end = text.find("\n", m.start())
        segment = text[line_start: line_end if line_end != -1 else len(text)]
        found = {k: int(v.replace(",", "")) for k, v in
                 re.findall(r"(total_samples|total_tokens)[\"']?\s*[:=]\s*([\d,]+)", segment)}
        if "total_samples" in found:
            return found
    return None
