"""`validate` says what is wrong in the plan's own terms (issue #17): a defined variable whose value has an
error is not "unknown", no "did you mean" names the very name written, a cycle of phases is said as phases,
an unclosed `${` is reported."""

from __future__ import annotations

from pathlib import Path

import pytest

from eagle_console.plan.interpolate import unknown_var_message
from eagle_console.plan.loader import PlanError, load_plan

HEAD = '[plan]\nid = "t"\ntitle = "t"\n\n'


def line_of(text: str, needle: str) -> int:
    return text[:text.index(needle)].count("\n") + 1


def issues(tmp_path: Path, text: str) -> list:
    path = tmp_path / "plan.toml"
    path.write_text(text)
    with pytest.raises(PlanError) as info:
        load_plan(path, environ={})
    return info.value.errors


def test_a_defined_variable_with_a_broken_value_is_not_called_unknown(tmp_path):
    text = HEAD + '[vars]\nc = "${env:NOT_SET_HERE}"\n\n[[phase]]\nid = "0"\ntitle = "p"\n\n' \
        '[[phase.step]]\nid = "0.1"\ntitle = "a"\nrun = "echo ${c}"\n'
    errs = issues(tmp_path, text)
    assert [e.line for e in errs] == [line_of(text, 'c = '), line_of(text, 'run = ')]
    assert "NOT_SET_HERE is not set" in errs[0].message
    assert "unknown" not in errs[1].message and "${c} cannot be used" in errs[1].message


def test_did_you_mean_never_names_the_name_written():
    assert "did you mean" not in unknown_var_message("q", {"q": "${q}"})
    assert "did you mean ${port}" in unknown_var_message("prot", {"port": 1})


def test_a_cycle_of_phases_is_said_as_phases_at_the_phase_line(tmp_path):
    text = HEAD + '[[phase]]\nid = "0"\ntitle = "p0"\nneeds = ["1"]\n\n[[phase.step]]\nid = "0.1"\ntitle = "a"\n' \
        'run = "true"\n\n[[phase]]\nid = "1"\ntitle = "p1"\nneeds = ["0"]\n\n[[phase.step]]\nid = "1.1"\n' \
        'title = "b"\nrun = "true"\n'
    [err] = issues(tmp_path, text)
    assert err.line == line_of(text, 'needs = ["1"]') and "needs cycle: phase 0 -> phase 1 -> phase 0" in err.message


def test_an_unclosed_variable_reference_is_reported(tmp_path):
    text = HEAD + '[vars]\nport = "1"\n\n[[phase]]\nid = "0"\ntitle = "p"\n\n[[phase.step]]\nid = "0.1"\n' \
        'title = "a"\nrun = "echo ${port"\n'
    [err] = issues(tmp_path, text)
    assert err.line == line_of(text, 'run = ') and "unclosed ${" in err.message
