"""The alarms (parse/alarms.py) over readings: held while requests run, broken by a good reading, paused by idle."""

from __future__ import annotations

import clikit

from eagle_console.parse.alarms import (
    Point,
    accept_length_one,
    accept_length_one_counted,
    alarms,
    below_baseline,
    missing_ranks,
    token_usage_high,
)


def run(accepts: list[float | None], tput: float = 40.0, running: int = 1, every: float = 1.0,
        usage: float = 0.1, t0: float = 0.0) -> list[Point]:
    return [Point(t0 + i * every, running, a, tput, usage) for i, a in enumerate(accepts)]


def test_accept_length_one_needs_the_hold():
    assert accept_length_one(run([1.0] * 10), hold_s=10) is None  # 9 s of readings
    f = accept_length_one(run([1.0] * 12), hold_s=10)
    assert f is not None and f.code == "ACCEPT_LENGTH_ONE" and f.severity == "error"
    assert "11 s" in f.message and "EAGLE3" in f.message and "d2t" in f.message


def test_a_good_reading_ends_the_streak():
    points = run([1.0] * 8 + [2.4] + [1.0] * 6)
    assert accept_length_one(points, hold_s=10) is None
    assert accept_length_one(points, hold_s=5) is not None


def test_idle_readings_neither_count_nor_break():
    """Between benchmark requests the server idles: those seconds are not decoding, and not a reset."""
    busy1 = run([1.0] * 6)
    idle = [Point(6.0 + i, 0, 1.0, 0.0, 0.0) for i in range(30)]
    busy2 = run([1.0] * 6, t0=36.0)
    assert accept_length_one(busy1 + idle + busy2, hold_s=10) is not None  # 5 s + 5 s of decoding
    assert accept_length_one(busy1 + idle + busy2, hold_s=11) is None


def test_a_working_drafter_raises_nothing():
    assert alarms(run([2.6, 3.1, 2.9] * 10, tput=95.0), baseline_tok_s=82.0, hold_s=5) == []


def test_no_speculation_is_not_accept_length_one():
    assert accept_length_one(run([None] * 30), hold_s=5) is None
    assert below_baseline(run([None] * 30, tput=40.0), 82.0, hold_s=5) is None


def test_below_baseline_with_speculation_on():
    f = below_baseline(run([1.0] * 15, tput=37.0), 82.0, hold_s=10)
    assert f is not None and f.code == "BELOW_BASELINE" and "37.0 tok/s" in f.message and "82" in f.message
    assert below_baseline(run([2.8] * 15, tput=95.0), 82.0, hold_s=10) is None
    assert below_baseline(run([1.0] * 15, tput=37.0), None, hold_s=10) is None  # no baseline in the plan


def test_token_usage_high_while_running_only():
    f = token_usage_high(run([2.0] * 3, usage=0.97, running=12))
    assert f is not None and f.code == "TOKEN_USAGE_HIGH" and "12 requests" in f.message
    assert token_usage_high(run([2.0] * 3, usage=0.97, running=0)) is None
    assert token_usage_high(run([2.0] * 3, usage=0.80, running=12)) is None


def test_accept_length_from_counters():
    # 40 requests of 128 tokens, none accepted: 127 verify steps each
    f = accept_length_one_counted(40 * 128, 40, 40 * 127)
    assert f is not None and "1.00 over 5080 verify steps" in f.message
    assert accept_length_one_counted(40 * 128, 40, 40 * 40) is None  # ~3.2: working
    assert accept_length_one_counted(10, 1, 9) is None  # too few verify steps to say


def test_missing_ranks():
    f = missing_ranks({"tp0", "tp1", "tp2", "tp3"}, {"tp0", "tp2"}, "--enable-metrics-for-all-schedulers with tp 4")
    assert f is not None and f.code == "RANK_METRICS_MISSING" and "tp1, tp3" in f.message
    assert missing_ranks({"tp0"}, {"tp0", "tp1"}, "") is None


# ---- the same alarms from the server log (`server-log`, the Server pane) -------------------------------------

def decode_line(second: int, accept: float, tput: float, usage: float = 0.01, running: int = 1) -> str:
    """A 0.5.23 decode log line (metrics_reporter.py:963-1043), as the capture of sglang#11948 lays it out."""
    return (f"[2026-12-04 10:{second // 60:02d}:{second % 60:02d} TP0] Decode batch, #running-req: {running}, "
            f"#token: 900, token usage: {usage:.2f}, accept len: {accept:.2f}, accept rate: 0.00, "
            f"cuda graph: True, gen throughput (token/s): {tput:.2f}, #queue-req: 0")


def test_server_log_raises_accept_length_one_and_below_baseline():
    from eagle_console.parse.sglang_log import SglangLogParser

    parser = SglangLogParser(baseline_tok_s=82.0)
    parser.feed(decode_line(s, 1.0, 37.5) for s in range(15))
    codes = {f.code: f for f in parser.findings()}
    assert codes["ACCEPT_LENGTH_ONE"].severity == "error" and "14 s" in codes["ACCEPT_LENGTH_ONE"].message
    assert "37.5 tok/s" in codes["BELOW_BASELINE"].message
    assert "LOW_ACCEPT_LEN" not in codes  # the stronger finding says it
    assert {f["code"] for f in parser.summary()["findings"]} >= {"ACCEPT_LENGTH_ONE", "BELOW_BASELINE"}


def test_server_log_token_usage_high():
    from eagle_console.parse.sglang_log import SglangLogParser

    parser = SglangLogParser()
    parser.feed([decode_line(0, 2.8, 410.0, usage=0.97, running=40)])
    assert [f.code for f in parser.findings()] == ["TOKEN_USAGE_HIGH"]


def test_real_eagle3_capture_raises_no_alarm():
    """tests/data/sglang/sglang11948_eagle3_decode_tp0.txt (sglang#11948): accept len 1.8-2.2, a working drafter."""
    from pathlib import Path

    from eagle_console.parse.sglang_log import SglangLogParser

    parser = SglangLogParser(baseline_tok_s=82.0)
    parser.feed((Path(__file__).parent / "data" / "sglang" / "sglang11948_eagle3_decode_tp0.txt").read_text().splitlines())
    assert not {"ACCEPT_LENGTH_ONE", "BELOW_BASELINE", "TOKEN_USAGE_HIGH"} & {f.code for f in parser.findings()}


def test_server_log_command_json(tmp_path):
    import json

    log = tmp_path / "server.log"
    log.write_text("\n".join(decode_line(s, 1.0, 37.5) for s in range(15)) + "\n")
    out = clikit.run(["server-log", log, "--json", "--baseline", "82"], timeout=60)
    doc = json.loads(out.stdout)
    assert out.returncode == 1  # an error finding
    assert {"ACCEPT_LENGTH_ONE", "BELOW_BASELINE"} <= {f["code"] for f in doc["findings"]}
    text = clikit.run(["server-log", log], timeout=60).stdout
    assert "ACCEPT_LENGTH_ONE" in text and "BELOW_BASELINE" not in text  # no baseline given
