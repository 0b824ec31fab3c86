"""One grace parser for `--grace`, `with.grace` and EAGLE_CONSOLE_KILL_GRACE (timeouts and rollbacks too).

Before, the console read `"1m30s"` as 10 s, the engine read `"3s"` as 10 s and `"-5"` as -5 s, and the
console turned `-5` into 0 (SIGKILL at once) without a word.
"""

from __future__ import annotations

import pytest

from eagle_console.engine.builtins import get_builtin
from eagle_console.engine.runner import kill_grace_s
from eagle_console.node.grace import DEFAULT_GRACE_S, GRACE_ENV, GraceError, parse_grace, resolve_grace


@pytest.mark.parametrize(("value", "seconds"), [("10s", 10.0), (10, 10.0), ("10", 10.0), ("1m30s", 90.0),
                                                (2.5, 2.5), ("500ms", 0.5), (0, 0.0), ("0s", 0.0)])
def test_parse_grace_accepts_numbers_and_durations(value, seconds):
    assert parse_grace(value) == seconds


@pytest.mark.parametrize("value", ["-5", "-5s", -1, -0.5, " -1m "])
def test_parse_grace_refuses_negatives_clearly(value):
    with pytest.raises(GraceError, match="negative"):
        parse_grace(value, "--grace")


@pytest.mark.parametrize("value", ["soon", "", "10x", True, [10]])
def test_parse_grace_refuses_what_is_not_a_duration(value):
    with pytest.raises(GraceError, match="grace"):
        parse_grace(value)


def test_resolve_grace_given_then_environment_then_default():
    assert resolve_grace(None, environ={}) == DEFAULT_GRACE_S
    assert resolve_grace(None, environ={GRACE_ENV: " "}) == DEFAULT_GRACE_S
    assert resolve_grace(None, environ={GRACE_ENV: "1m30s"}) == 90.0
    assert resolve_grace("2s", environ={GRACE_ENV: "1m30s"}) == 2.0
    with pytest.raises(GraceError, match=GRACE_ENV):
        resolve_grace(None, environ={GRACE_ENV: "-5"})


def test_engine_grace_reads_units_and_never_goes_negative(monkeypatch, capsys):
    monkeypatch.setenv(GRACE_ENV, "3s")
    assert kill_grace_s() == 3.0
    monkeypatch.setenv(GRACE_ENV, "10")
    assert kill_grace_s() == 10.0
    monkeypatch.setenv(GRACE_ENV, "-5")
    assert kill_grace_s() == DEFAULT_GRACE_S
    assert "negative" in capsys.readouterr().err


def test_gpu_kill_with_grace_uses_the_same_parser():
    kill = get_builtin("gpu.kill")
    assert kill.validate({"grace": "10s"}) == [] and kill.validate({"grace": 10}) == []
    assert kill.validate({"grace": 0}) == []
    (problem,) = kill.validate({"grace": "-10s"})
    assert "`grace`" in problem and "negative" in problem
