"""Plan TOML text is written once (plan/text.py): `init`, the demo and the multi-node demo build their plans
with it (issue 30: three templates repeated the same tables), and what it writes reads back as written."""

from __future__ import annotations

import sys
from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

from eagle_console.plan.loader import load_plan, tomllib
from eagle_console.plan.text import Note, Phase, Step, plan_text, table, toml


@given(st.recursive(st.text() | st.integers() | st.booleans() | st.floats(allow_nan=False, allow_infinity=False),
                    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(
                        st.from_regex(r"[a-z_]{1,8}", fullmatch=True), inner, max_size=3), max_leaves=8))
def test_a_value_reads_back_as_written(value):
    assert tomllib.loads(f"k = {toml(value)}\n")["k"] == value


def test_tables_phases_and_comments():
    text = plan_text(["a plan", "#:schema x"], [table("plan", [("id", "p", "its journal's key"), ("title", "T")])],
                     [Phase([("id", "0"), ("title", "P")], [
                         Step([("id", "0.1"), Note("why"), ("title", "s"), ("run", "true")],
                              with_=[("tp", 8)])])])
    assert text.startswith("# a plan\n#:schema x\n\n[plan]\n")
    assert 'id = "p"' in text and "# its journal's key" in text and "  # why\n" in text
    doc = tomllib.loads(text)
    assert doc["phase"][0]["step"][0] == {"id": "0.1", "title": "s", "run": "true", "with": {"tp": 8}}


def test_the_three_plans_are_built_by_it_and_load(tmp_path):
    from eagle_console.cli.init_cmds import render
    from eagle_console.demo.build import plan_for
    from eagle_console.demo.multinode import write_plan

    init = tmp_path / "init.toml"
    init.write_text(render(init))
    demo = tmp_path / "demo.toml"
    demo.write_text(plan_for(str(tmp_path), f"{sys.executable} -m x", 30000, sys.executable))
    nodes = write_plan(tmp_path / "nodes", ["a", "b"])
    for path in (init, demo, nodes):
        assert load_plan(Path(path), environ={}).steps()
    assert "Quick Probe — try" in demo.read_text()  # readable, not \u-escaped
