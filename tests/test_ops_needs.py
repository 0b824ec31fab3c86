"""The needs rule once: `next`, the journal's check inside begin_run, and the tree/detail line agree."""

from __future__ import annotations

import pytest
from enginekit import engine_for, write_plan

from eagle_console.journal import Refused, unmet_needs
from eagle_console.journal.status import need_steps, unmet
from eagle_console.ops import steps

PLAN = """
    [[phase]]
    id = "0"
    title = "prep"
      [[phase.step]]
      id = "0.1"
      title = "a"
      run = "true"
      [[phase.step]]
      id = "0.2"
      title = "b"
      run = "true"

    [[phase]]
    id = "E"
    title = "nothing to do yet"

    [[phase]]
    id = "1"
    title = "serve"
      [[phase.step]]
      id = "1.1"
      title = "needs a whole phase"
      needs = ["0"]
      run = "true"
      [[phase.step]]
      id = "1.2"
      title = "needs an empty phase"
      needs = ["E"]
      run = "true"
"""


def _agree(eng, step_id: str) -> bool:
    """Whether `step_id`'s needs are met, asserting that the tree (unmet_needs), the journal's check in
    begin_run and `next` (with every other runnable step out of the way) say the same."""
    plan, journal = eng.plan, eng.journal
    step = plan.step(step_id)
    tree = not unmet_needs(plan, step, journal.statuses())
    try:
        journal.begin_run(step_id, command="x", log=None, needs=plan.expand_needs(step.needs))
        journal_ok = True
    except Refused:
        journal_ok = False
    behind = set(plan.expand_needs(step.needs))
    statuses = {s.id: ("skipped" if s.id not in behind else journal.statuses().get(s.id, "pending"))
                for s in plan.steps() if s.id != step_id}
    nxt = steps.next_step(plan, statuses)
    next_ok = nxt is not None and nxt.id == step_id
    assert tree == journal_ok == next_ok, (step_id, tree, journal_ok, next_ok)
    return tree


def test_a_need_on_an_empty_phase_is_met_everywhere(tmp_path):
    eng = engine_for(write_plan(tmp_path, PLAN))
    assert unmet_needs(eng.plan, eng.plan.step("1.2"), {}) == []  # the old tree said ["E"]; begin_run let it run
    assert _agree(eng, "1.2") is True


@pytest.mark.parametrize(("marks", "met"), [
    ({}, False),
    ({"0.1": "completed"}, False),
    ({"0.1": "completed", "0.2": "skipped"}, True),
    ({"0.1": "completed", "0.2": "rolled_back"}, False),
    ({"0.1": "completed", "0.2": "failed"}, False),
])
def test_a_phase_need_agrees_in_next_begin_run_and_tree(tmp_path, marks, met):
    eng = engine_for(write_plan(tmp_path, PLAN))
    for sid, status in marks.items():
        eng.journal.mark(sid, status)
    assert _agree(eng, "1.1") is met


def test_begin_run_takes_the_need_map_and_names_the_unmet_need(tmp_path):
    eng = engine_for(write_plan(tmp_path, PLAN))
    eng.journal.mark("0.1", "completed")
    needs = need_steps(eng.plan, eng.plan.step("1.1").needs)
    assert needs == {"0": ("0.1", "0.2")}
    with pytest.raises(Refused, match="needs 0 completed first"):
        eng.journal.begin_run("1.1", command="x", log=None, needs=needs)
    assert eng.journal.statuses().get("1.1") is None  # refused: nothing written
    assert unmet(needs, {"0.1": "completed", "0.2": "skipped"}) == []
    assert unmet({"E": ()}, {}) == []
