"""${var} interpolation, shell quoting and durations; quoting is checked by running the command."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from eagle_console.plan.durations import DurationError, parse_duration
from eagle_console.plan.interpolate import InterpolationError, interpolate, interpolate_value, resolve_vars
from eagle_console.plan.loader import load_plan


def test_vars_using_vars_keep_types() -> None:
    values, errors = resolve_vars({"port": 30000, "url": "http://127.0.0.1:${port}", "p2": "${port}",
                                   "flag": True, "f": "${flag}-x"}, environ={})
    assert errors == {}
    assert values == {"port": 30000, "url": "http://127.0.0.1:30000", "p2": 30000, "flag": True, "f": "true-x"}


def test_unknown_and_cycle_are_reported_per_var() -> None:
    _, errors = resolve_vars({"a": "${b}", "b": "${a}", "c": "${nope}", "d": "ok"}, environ={})
    assert "cycle" in errors["a"] and "cycle" in errors["b"] and "unknown variable ${nope}" in errors["c"]
    assert "d" not in errors


def test_literal_and_lone_dollar() -> None:
    assert interpolate("cost $5, $${x} and ${a}", {"a": "b"}, environ={}) == "cost $5, ${x} and b"


def test_with_value_exact_reference_keeps_type() -> None:
    out = interpolate_value({"port": "${port}", "url": ":${port}", "l": ["${port}", {"x": "${port}"}]},
                            {"port": 8}, environ={})
    assert out == {"port": 8, "url": ":8", "l": [8, {"x": 8}]}


def test_env_reference() -> None:
    assert interpolate("${env:A}/x", {}, environ={"A": "/h"}) == "/h/x"
    with pytest.raises(InterpolationError, match="A is not set"):
        interpolate("${env:A}", {}, environ={})


@pytest.mark.parametrize("hostile", ["a b", "x; touch PWNED", "$(touch PWNED)", "it's", '"q"', "`id`", "*"])
def test_shell_string_values_are_quoted(tmp_path: Path, hostile: str) -> None:
    """The command run by bash receives the var as one argument, unchanged, and runs nothing else."""
    (tmp_path / "plan.toml").write_text(
        '[plan]\nid = "q"\ntitle = "q"\n[vars]\nv = ' + _toml_str(hostile) + "\n"
        '[[phase]]\nid = "0"\ntitle = "p"\n[[phase.step]]\nid = "s"\ntitle = "s"\n'
        'run = "printf \'%s\\n\' ${v} ${v}"\n'
        'check = ["printf", "%s", "${v}"]\n')
    step = load_plan(tmp_path / "plan.toml", environ={}).step("s")
    out = subprocess.run(["/bin/bash", "-c", step.action.shell], cwd=tmp_path, capture_output=True, text=True)
    assert out.stdout == f"{hostile}\n{hostile}\n"
    assert not (tmp_path / "PWNED").exists()
    assert step.check.argv == ("printf", "%s", hostile)  # argv lists get the raw value


def _toml_str(s: str) -> str:
    return '"' + s.replace("\\", "\\\\").replace('"', '\\"') + '"'


@pytest.mark.parametrize(("text", "seconds"), [
    ("90s", 90), ("30m", 1800), ("2h", 7200), ("1h30m", 5400), ("500ms", 0.5), (45, 45), (2.5, 2.5), ("10", 10),
])
def test_durations(text, seconds) -> None:
    assert parse_duration(text) == seconds


@pytest.mark.parametrize("bad", ["", "soon", "10 parsecs", "m5", "-5s", 0, -1, True, [], float("inf"), 10 ** 400])
def test_bad_durations(bad) -> None:
    with pytest.raises(DurationError):
        parse_duration(bad)
