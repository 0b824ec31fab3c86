"""A step's environment is the operator's plus the plan's [env] and the step's env: nothing of ours.

Run from this source checkout (not installed), the console's own processes (the supervisor, a built-in
action) get the checkout root on their PYTHONPATH; the steps they start, and the server `sglang.server`
execs, get the operator's PYTHONPATH back exactly (issue #15). `test_install_wheel.py` covers an install.
"""

from __future__ import annotations

import json
import os
import shlex
import sys
from pathlib import Path

import pytest
from enginekit import engine_for, write_plan

from eagle_console.engine.builtins import check_with
from eagle_console.plan.loader import PlanError, load_plan
from eagle_console.pyenv import OWN_ENTRY_VAR, own_process_env, without_own_entry

REPO = Path(__file__).resolve().parent.parent

DUMP = "import os, json, sys; print(json.dumps({'pp': os.environ.get('PYTHONPATH'), 'own': os.environ.get('%s')}))"


def _plan(tmp_path: Path, target: Path) -> Path:
    server_python = shlex.join([sys.executable, "-c", DUMP % OWN_ENTRY_VAR])  # prints, then exits
    return write_plan(tmp_path, f"""
        [[phase]]
        id = "0"
        title = "P"
          [[phase.step]]
          id = "0.1"
          title = "shell"
          run = '''python3 -c "{DUMP % OWN_ENTRY_VAR}" > {tmp_path}/shell.json'''
          [[phase.step]]
          id = "0.2"
          title = "built-in"
          uses = "json.set"
          with = {{ path = "{target}", set = {{ a = 2 }} }}
          [[phase.step]]
          id = "0.3"
          title = "server"
          uses = "sglang.server"
          timeout = "30s"
          ready = {{ log = "never printed" }}
            [phase.step.with]
            model = "/m"
            python = '''{server_python}'''
    """)


def _run(eng, step_id: str):
    return eng.wait(eng.start(step_id), timeout=60)


def _dumped(text: str) -> dict:
    return json.loads(next(line for line in text.splitlines() if line.startswith("{")))


@pytest.mark.parametrize("operator_pp", [None, f"{REPO}{os.pathsep}/opt/operator/lib"])
def test_steps_and_the_server_get_the_operators_pythonpath(tmp_path, monkeypatch, operator_pp):
    if operator_pp is None:
        monkeypatch.delenv("PYTHONPATH", raising=False)  # a checkout run with nothing set: ours is needed
    else:
        monkeypatch.setenv("PYTHONPATH", operator_pp)
    target = tmp_path / "config.json"
    target.write_text('{"a": 1}')
    eng = engine_for(_plan(tmp_path, target))
    assert _run(eng, "0.1").outcome == "completed"
    assert _dumped((tmp_path / "shell.json").read_text()) == {"pp": operator_pp, "own": None}
    run = _run(eng, "0.2")
    assert run.outcome == "completed", Path(run.log).read_text()  # the built-in still imports this copy
    assert json.loads(target.read_text()) == {"a": 2}
    run = _run(eng, "0.3")  # the "server" prints its environment and exits: the step fails, as it should
    assert _dumped(Path(run.log).read_text()) == {"pp": operator_pp, "own": None}


def test_spec_env_is_the_overrides_only(tmp_path, monkeypatch):
    monkeypatch.setenv("SOME_OPERATOR_VAR", "x")
    target = tmp_path / "config.json"
    target.write_text("{}")
    eng = engine_for(_plan(tmp_path, target))
    run_id = eng.start("0.2")
    eng.wait(run_id, timeout=60)
    spec = json.loads((eng.plan.state_dir / "runs" / f"{run_id}.json").read_text())
    assert "SOME_OPERATOR_VAR" not in spec["env"] and "PATH" not in spec["env"]
    assert spec["env"]["EAGLE_CONSOLE_STEP"] == "0.2"


def test_own_entry_round_trip_keeps_an_operators_copy_of_it():
    base = {"PYTHONPATH": f"/ck{os.pathsep}/op", "X": "1"}
    ours = own_process_env(base, entry="/ck")
    assert ours["PYTHONPATH"] == f"/ck{os.pathsep}/ck{os.pathsep}/op" and ours[OWN_ENTRY_VAR] == "/ck"
    assert without_own_entry(ours) == base
    assert without_own_entry(own_process_env({}, entry="/ck")) == {}


def test_sglang_server_python_must_exist(tmp_path):
    text = f"""[plan]
id = "t"
title = "t"

[[phase]]
id = "0"
title = "P"
  [[phase.step]]
  id = "0.1"
  title = "server"
  uses = "sglang.server"
  with = {{ model = "/m", python = "{tmp_path}/no-such-venv/bin/python" }}

  [[phase.step]]
  id = "0.2"
  title = "server"
  uses = "sglang.server"
  with = {{ model = "/m", python = "no-such-python-anywhere -m x" }}
"""
    path = tmp_path / "plan.toml"
    path.write_text(text)
    with pytest.raises(PlanError) as info:
        load_plan(path, check_builtins=check_with)
    errs = info.value.errors
    assert [e.message for e in errs] == [
        f"sglang.server: `python`: {tmp_path}/no-such-venv/bin/python does not exist",
        "sglang.server: `python`: no-such-python-anywhere is not on PATH (give the full path of SGLang's "
        "interpreter)"]
    lines = text.splitlines()
    assert [(e.line, e.column) for e in errs] == [
        (i + 1, line.index("{") + 1) for i, line in enumerate(lines) if "python =" in line]
    assert f"{path}:{errs[0].line}:{errs[0].column}: " in str(info.value)
