"""tqdm progress and summary parsing, on real lines from GitHub threads (tests/data/tqdm_github.txt)."""

from __future__ import annotations

from pathlib import Path

import pytest

from eagle_console.parse.tqdm import last_progress, parse_clock, parse_progress, parse_summary

DATA = Path(__file__).resolve().parent / "data"


def blocks() -> dict[str, str]:
    out: dict[str, list[str]] = {}
    current = ""
    for line in (DATA / "tqdm_github.txt").read_text().splitlines():
        if line.startswith("--- "):
            current = line[4:]
            out[current] = []
        elif current:
            out[current].append(line)
    return {k: "\n".join(v) for k, v in out.items()}


def test_wandb_seconds_per_item_lines() -> None:
    text = blocks()["https://github.com/wandb/wandb/pull/674"]
    p = last_progress(text)
    assert p is not None and (p.n, p.total, p.desc) == (7, 115, "Iteration")
    assert p.rate_per_s == pytest.approx(1 / 1.86)
    assert (p.elapsed_s, p.remaining_s) == (13, 201)


def test_unknown_rate_and_no_total_forms() -> None:
    b = blocks()
    fit = last_progress(b["https://github.com/sQUlearn/squlearn/issues/178"])
    assert fit is not None and (fit.n, fit.total, fit.rate_per_s, fit.remaining_s) == (0, 25, None, None)
    bare = last_progress(b["https://github.com/brohrer/sharpened-cosine-similarity/pull/5"])
    assert bare is not None and (bare.n, bare.total, bare.rate_per_s) == (0, None, None)


def test_carriage_return_redraws_take_the_last() -> None:
    line = ("Extracting: 41%|████      | 4100/10000 [45:50<1:06:00, 1.49it/s]\r"
            "Extracting: 42%|████▎     | 4200/10000 [47:01<1:04:56, 1.49it/s, tokens=7.26M]")
    p = parse_progress(line)
    assert p is not None and (p.n, p.total, p.desc, p.postfix) == (4200, 10000, "Extracting", "tokens=7.26M")
    assert p.elapsed_s == 47 * 60 + 1 and p.remaining_s == 3600 + 4 * 60 + 56
    assert p.fraction == pytest.approx(0.42)


def test_unit_scaled_counts() -> None:
    p = parse_progress(" 42%|████▎     | 4.20k/10.0k [47:01<1:04:56, 1.49it/s]")
    assert p is not None and (p.n, p.total) == (4200, 10000)


def test_clock_and_garbage() -> None:
    assert parse_clock("1:04:56") == 3896 and parse_clock("?") is None
    assert parse_progress("INFO 2025 nothing here [x]") is None
    assert last_progress("") is None


def test_summary_json_line_pretty_and_text() -> None:
    one = 'done\n{"total_samples": 10000, "total_tokens": 17285548, "errors": 0}\n'
    assert parse_summary(one) == {"total_samples": 10000, "total_tokens": 17285548, "errors": 0}
    pretty = 'x {"a": 1}\n{\n  "stats": {"skipped": 0},\n  "total_samples": 10000,\n  "total_tokens": 17285548\n}\n'
    assert parse_summary(pretty)["total_tokens"] == 17285548
    assert parse_summary("total_samples: 10,000 total_tokens: 17,285,548") == {
        "total_samples": 10000, "total_tokens": 17285548}
    assert parse_summary("no summary yet") is None
