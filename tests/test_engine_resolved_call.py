"""A built-in does what was resolved when its run (or rollback) started, whatever the plan says since.

Real supervisors, real plan files: each test rewrites the TOML after the engine wrote the spec and before
the built-in's process starts. The action process never reads the plan, so the edit changes nothing.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from enginekit import engine_for, wait_for, write_plan

import eagle_console.engine.rollback as rollback_mod
import eagle_console.engine.runner as runner_mod
from eagle_console.engine.rollback import rollback_outcome, start_rollback


@pytest.fixture(autouse=True)
def _short_grace(monkeypatch):
    monkeypatch.setenv("EAGLE_CONSOLE_KILL_GRACE", "1")


def edit_before_launch(monkeypatch, module, plan: Path, old: str, new: str) -> None:
    """Rewrite the plan file after the spec is written, just before the supervisor starts."""
    real = module.launch_supervisor

    def launch(spec_path: Path) -> None:
        text = plan.read_text()
        assert old in text
        plan.write_text(text.replace(old, new))
        real(spec_path)

    monkeypatch.setattr(module, "launch_supervisor", launch)


def json_set_plan(tmp_path: Path, cfg: Path, step_extra: str = "", how: str = 'uses = "json.set"') -> Path:
    cfg.write_text(json.dumps({"max_position_embeddings": 1}))
    return write_plan(tmp_path, f"""
        [[phase]]
        id = "0"
        title = "P"
          [[phase.step]]
          id = "0.1"
          title = "set the context length"
          {how}
          {step_extra}
    """)


def test_run_does_the_with_it_was_started_with(tmp_path, monkeypatch):
    cfg = tmp_path / "config.json"
    plan = json_set_plan(tmp_path, cfg, f'with = {{ path = "{cfg}", set = {{ max_position_embeddings = 262144 }} }}')
    eng = engine_for(plan)
    edit_before_launch(monkeypatch, runner_mod, plan, "262144", "999")
    run = eng.wait(eng.start("0.1"), timeout=30)
    assert run.outcome == "completed", open(run.log).read()
    assert json.loads(cfg.read_text())["max_position_embeddings"] == 262144
    assert "999" in plan.read_text()  # the edit happened


def test_check_does_the_with_it_was_started_with(tmp_path):
    cfg = tmp_path / "config.json"
    flag = tmp_path / "go"
    plan = json_set_plan(
        tmp_path, cfg,
        f'check = {{ uses = "json.set", with = {{ path = "{cfg}", set = {{ checked = "as started" }} }} }}',
        how=f'run = "while [ ! -e {flag} ]; do sleep 0.05; done"')
    eng = engine_for(plan)
    run_id = eng.start("0.1")
    wait_for(lambda: (r := eng.journal.run(run_id)) and r.pid)  # the action is running, waiting for the flag
    plan.write_text(plan.read_text().replace("as started", "as edited"))
    flag.touch()
    run = eng.wait(run_id, timeout=30)
    assert run.outcome == "completed", open(run.log).read()
    assert json.loads(cfg.read_text())["checked"] == "as started"


def test_rollback_action_does_the_with_of_when_the_rollback_started(tmp_path, monkeypatch):
    cfg = tmp_path / "config.json"
    plan = json_set_plan(
        tmp_path, cfg,
        f'rollback = {{ uses = "json.set", with = {{ path = "{cfg}", set = {{ rolled = "as asked" }} }} }}',
        how='run = "true"')
    eng = engine_for(plan)
    assert eng.wait(eng.start("0.1"), timeout=30).outcome == "completed"
    edit_before_launch(monkeypatch, rollback_mod, plan, "as asked", "as edited")
    rb_id, _ = start_rollback(eng, "0.1")
    outcome = wait_for(lambda: rollback_outcome(eng, rb_id), timeout=40)
    assert outcome["outcome"] == "completed", outcome
    assert json.loads(cfg.read_text())["rolled"] == "as asked"


def test_builtin_undo_runs_even_if_the_step_changed_since(tmp_path, monkeypatch):
    cfg = tmp_path / "config.json"
    plan = json_set_plan(tmp_path, cfg, f'with = {{ path = "{cfg}", set = {{ max_position_embeddings = 262144 }} }}')
    original = cfg.read_bytes()
    eng = engine_for(plan)
    assert eng.wait(eng.start("0.1"), timeout=30).outcome == "completed"
    # Rewritten into a step of another built-in: the undo that was asked for is still json.set's.
    edit_before_launch(monkeypatch, rollback_mod, plan, 'uses = "json.set"', 'uses = "http.wait"')
    rb_id, items = start_rollback(eng, "0.1")
    assert items[0].description == "json.set undo"
    outcome = wait_for(lambda: rollback_outcome(eng, rb_id), timeout=40)
    assert outcome["outcome"] == "completed", outcome
    assert cfg.read_bytes() == original
