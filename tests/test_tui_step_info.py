"""The Step pane writes a built-in's `with` for people: one key per line, a table as {k: v}, a list as [..],
never a Python repr ({'algorithm': ...} and ['--trust-remote-code'] were shown before)."""

from __future__ import annotations

from enginekit import write_plan

from eagle_console.plan.loader import load_plan
from eagle_console.tui.panes.step_info import info_text

PLAN = '''
[[phase]]
id = "0"
title = "serve"
  [[phase.step]]
  id = "0.3"
  title = "Launch SGLang"
  uses = "sglang.server"
    [phase.step.with]
    model = "/data/models/Kimi-K2.5"
    tp = 8
    speculative = { algorithm = "EAGLE3", num_steps = 2 }
    args = ["--trust-remote-code"]
'''


def test_with_values_are_written_for_people(tmp_path):
    plan = load_plan(write_plan(tmp_path, PLAN))
    text = info_text(plan, "0.3").plain
    assert "  model: /data/models/Kimi-K2.5\n" in text
    assert "  tp: 8\n" in text
    assert "  speculative: {algorithm: EAGLE3, num_steps: 2}\n" in text
    assert "  args: [--trust-remote-code]\n" in text
    assert "'" not in text, text
