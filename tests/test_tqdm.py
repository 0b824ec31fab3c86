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


def test_scaled_rates_are_items_per_second() -> None:
    # gIMble's VCF parser (a public log in the code index): unit_scale counts and a `kit/s` rate.
    p = parse_progress("[%] : 100%|█████████████████████████████████████████████████████| 145k/145k "
                       "[00:41<00:00, 3.51kit/s]")
    assert p is not None and p.n == 145_000 and p.rate_per_s == 3510.0
    # A public note demonstrating unit_scale=True (code index): 10.1kit/s is 10100 items per second.
    p = parse_progress("59%|█████▉    | 73.0k/123k [00:07<00:05, 10.1kit/s]")
    assert p is not None and (p.n, p.total, p.rate_per_s) == (73_000, 123_000, 10_100.0)
    # Old tqdm spelled the prefix `K` (a public log of a network-building tool, code index).
    p = parse_progress("Processing edges -- finished: 100%|██████████| 14.3K/14.3K [00:00<00:00, 168Kit/s]")
    assert p is not None and p.n == 14_300 and p.rate_per_s == 168_000.0
    # The no-total form with M-scaled counts and rate (a GPT-2 checkpoint download log, code index).
    p = parse_progress("Fetching model.ckpt.data-00000-of-00001: 498Mit [05:21, 1.55Mit/s]")
    assert p is not None and p.n == 498_000_000 and p.total is None and p.rate_per_s == 1_550_000.0


def test_unit_divisor_1024_where_the_unit_says_ib() -> None:
    # tqdm's format_sizeof docstring: format_sizeof(3.5*1024*1024, suffix='Bytes', divisor=1024) == '3.50MBytes';
    # with tqdm's documented `unit="iB", unit_scale=True, unit_divisor=1024` the bar reads `3.50MiB`.
    p = parse_progress("3.50MiB [00:01, 3.50MiB/s]")
    assert p is not None and p.n == round(3.5 * 1024 * 1024) and p.rate_per_s == 3.5 * 1024 * 1024
    # A plain `B` unit keeps the SI divisor: nothing in the text says 1024.
    p = parse_progress("model.safetensors: 100%|██████████| 4.97G/4.97G [00:41<00:00, 120MB/s]")
    assert p is not None and p.n == 4_970_000_000 and p.rate_per_s == 120e6


def test_sglang_weight_loading_bar_format() -> None:
    # https://github.com/vllm-project/vllm-ascend/issues/6734: `{desc}: {percentage:3.0f}% Completed | ...`
    p = parse_progress("Loading safetensors checkpoint shards:  10% Completed | 10/99 [00:12<01:40,  1.13s/it]")
    assert p is not None and (p.n, p.total, p.elapsed_s, p.remaining_s) == (10, 99, 12.0, 100.0)
    assert p.desc == "Loading safetensors checkpoint shards" and abs(p.rate_per_s - 1 / 1.13) < 1e-9
