"""Rollback order, cascade refusal, json.set byte-for-byte undo and drift refusal, resumability."""

from __future__ import annotations

import json

import pytest
from enginekit import engine_for, wait_for, write_plan

from eagle_console.engine.rollback import plan_rollback, rollback_outcome, start_rollback
from eagle_console.journal import Refused


@pytest.fixture(autouse=True)
def _short_grace(monkeypatch):
    monkeypatch.setenv("EAGLE_CONSOLE_KILL_GRACE", "1")


def finish_rollback(eng, target, **kw):
    rb_id, items = start_rollback(eng, target, **kw)
    return wait_for(lambda: rollback_outcome(eng, rb_id), timeout=40), items


def three_step_plan(tmp_path):
    order = tmp_path / "order.txt"
    return write_plan(tmp_path, f"""
        [[phase]]
        id = "0"
        title = "P"
          [[phase.step]]
          id = "0.1"
          title = "a"
          run = "echo do-a >> {order}"
          rollback = "echo undo-a >> {order}"
          [[phase.step]]
          id = "0.2"
          title = "b"
          needs = ["0.1"]
          run = "echo do-b >> {order}"
          rollback = "echo undo-b >> {order}"
          [[phase.step]]
          id = "0.3"
          title = "c"
          needs = ["0.2"]
          run = "echo do-c >> {order}"
          rollback = "echo undo-c >> {order}"
    """), order


def test_phase_rolls_back_in_reverse_order(tmp_path):
    path, order = three_step_plan(tmp_path)
    eng = engine_for(path)
    for sid in ("0.1", "0.2", "0.3"):
        assert eng.wait(eng.start(sid), timeout=30).outcome == "completed"
    outcome, items = finish_rollback(eng, "0")
    assert outcome["outcome"] == "completed"
    assert [i.step_id for i in items] == ["0.3", "0.2", "0.1"]
    assert order.read_text().split() == ["do-a", "do-b", "do-c", "undo-c", "undo-b", "undo-a"]
    assert all(eng.journal.statuses()[s] == "rolled_back" for s in ("0.1", "0.2", "0.3"))


def test_step_with_completed_dependents_needs_cascade(tmp_path):
    path, order = three_step_plan(tmp_path)
    eng = engine_for(path)
    for sid in ("0.1", "0.2", "0.3"):
        eng.wait(eng.start(sid), timeout=30)
    with pytest.raises(Refused, match="0.2.*roll it back first") as refused:
        plan_rollback(eng, "0.1")
    assert refused.value.fix == "cascade"  # each face names its own way to cascade (cli: --cascade)
    items = plan_rollback(eng, "0.1", cascade=True)
    assert [i.step_id for i in items] == ["0.3", "0.2", "0.1"]


def test_interrupted_rollback_resumes_where_it_stopped(tmp_path):
    path, order = three_step_plan(tmp_path)
    flag = tmp_path / "broken"
    flag.write_text("x")
    text = path.read_text().replace(f'rollback = "echo undo-b >> {order}"',
                                    f'rollback = "test ! -e {flag} && echo undo-b >> {order}"')
    path.write_text(text)
    eng = engine_for(path)
    for sid in ("0.1", "0.2", "0.3"):
        eng.wait(eng.start(sid), timeout=30)
    outcome, _ = finish_rollback(eng, "0")
    assert outcome["outcome"] == "failed" and outcome["failed_step"] == "0.2"
    assert eng.journal.statuses()["0.3"] == "rolled_back" and eng.journal.statuses()["0.2"] == "completed"
    flag.unlink()
    outcome, items = finish_rollback(eng, "0")
    assert outcome["outcome"] == "completed" and [i.step_id for i in items] == ["0.2", "0.1"]
    assert order.read_text().split()[3:] == ["undo-c", "undo-b", "undo-a"]


def json_plan(tmp_path):
    cfg = tmp_path / "drafter" / "config.json"
    cfg.parent.mkdir()
    original = b'{"architectures": ["LlamaForCausalLMEagle3"],\n  "max_position_embeddings": 131072, "x": {"y": 1}}'
    cfg.write_bytes(original)
    path = write_plan(tmp_path, f"""
        [[phase]]
        id = "0"
        title = "P"
          [[phase.step]]
          id = "0.2"
          title = "fix config"
          uses = "json.set"
          with = {{ path = "{cfg}", set = {{ max_position_embeddings = 262144, "x.z" = "new" }} }}
    """)
    return path, cfg, original


def test_json_set_and_undo_restore_exact_bytes(tmp_path):
    path, cfg, original = json_plan(tmp_path)
    eng = engine_for(path)
    run = eng.wait(eng.start("0.2"), timeout=30)
    assert run.outcome == "completed", open(run.log).read()
    doc = json.loads(cfg.read_text())
    assert doc["max_position_embeddings"] == 262144 and doc["x"] == {"y": 1, "z": "new"}
    outcome, _ = finish_rollback(eng, "0.2")
    assert outcome["outcome"] == "completed"
    assert cfg.read_bytes() == original


def test_json_set_undo_refuses_on_drift_unless_forced(tmp_path):
    path, cfg, original = json_plan(tmp_path)
    eng = engine_for(path)
    eng.wait(eng.start("0.2"), timeout=30)
    cfg.write_text(cfg.read_text().replace("262144", "200000"))  # someone edited it since
    outcome, _ = finish_rollback(eng, "0.2")
    assert outcome["outcome"] == "failed" and outcome["failed_step"] == "0.2"
    log = open(eng.journal.runs("0.2")[-1].log).read()
    assert "changed since json.set wrote it" in log
    assert b"200000" in cfg.read_bytes()
    outcome, _ = finish_rollback(eng, "0.2", force=True)
    assert outcome["outcome"] == "completed" and cfg.read_bytes() == original


def test_unavailable_builtin_fails_clearly_not_silently(tmp_path):
    path = write_plan(tmp_path, """
        [[phase]]
        id = "0"
        title = "P"
          [[phase.step]]
          id = "0.1"
          title = "uses a built-in from a later issue"
          uses = "extraction.verify"
          with = { path = "/nonexistent" }
    """)
    from eagle_console.engine.builtins import available

    eng = engine_for(path)
    run = eng.wait(eng.start("0.1"), timeout=30)
    assert run.outcome == "failed"
    if not available("extraction.verify"):
        assert "not available yet" in open(run.log).read()


def test_a_run_begun_but_not_yet_started_is_said_to_be_starting_not_to_lack_an_undo(tmp_path):
    """The window between `run` journaling its start and the supervisor recording the action's session
    (a CI run hit it: `run --wait` killed in it): the step has no `rollback`, but the refusal must say
    why it cannot be rolled back now, not tell the operator to add one or to --force a mark."""
    path = write_plan(tmp_path, """
        [[phase]]
        id = "0"
        title = "P"
          [[phase.step]]
          id = "0.1"
          title = "long"
          run = "sleep 60"
    """)
    eng = engine_for(path)
    run_id = eng.journal.begin_run("0.1", command="sleep 60", log=None)  # what `run` writes before its supervisor
    for force in (False, True):
        with pytest.raises(Refused, match=r"step 0\.1 is starting \(run 1 of step 0\.1 .*try again") as caught:
            plan_rollback(eng, "0.1", force=force)
        assert "no `rollback`" not in str(caught.value)
    assert eng.journal.statuses()["0.1"] == "in_progress" and not eng.journal.run(run_id).finished
