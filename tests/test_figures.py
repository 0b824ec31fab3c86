"""Figures for people on every face (issue #17): no `1.224e+04`, no Python dict reprs — in the markdown
export, the Results table and the Extraction tab's finished line alike."""

from __future__ import annotations

import os

import clikit
import pytest
from enginekit import write_plan

from eagle_console.figures import format_value


@pytest.mark.parametrize(("value", "text"), [
    (12240.0, "12240"), (82.35, "82.35"), (82.0, "82"), (0.85, "0.85"), (0.851234, "0.8512"),
    (1.5e-05, "1.50e-05"), (1234567.0, "1234567"), (3, "3"), (True, "true"),
    ({"samples": 100, "tok_s": 15.0, "files": [1, 2.5]}, "samples: 100, tok_s: 15, files: [1, 2.5]"),
])
def test_format_value(value, text):
    assert format_value(value) == text


def test_the_markdown_export_writes_figures_for_people(tmp_path):
    plan = write_plan(tmp_path, """
        [[phase]]
        id = "0"
        title = "P"

        [[phase.step]]
        id = "0.1"
        title = "bench"
        run = "echo '::result tok_s=12240.0' && echo '::result accept_length=3.1234567'"
    """)
    plan.write_text(plan.read_text().replace('title = "test plan"\n', 'title = "test plan"\nbaseline = { tok_s = 12240.0 }\n', 1))
    env = {**os.environ, "EAGLE_CONSOLE_STATE": str(tmp_path / "state")}
    run = clikit.run(["run", plan, "0.1", "--wait"], timeout=60, env=env)
    assert run.returncode == 0, run.stderr
    md = clikit.run(["export", plan, "--format", "markdown"], timeout=60, env=env).stdout
    assert "e+0" not in md
    assert "Baseline: tok_s = 12240" in md and "result tok_s = 12240" in md and "accept_length = 3.12" in md


def test_the_extraction_tab_and_results_show_the_same_figures():
    pytest.importorskip("textual")
    from eagle_console.journal import Result
    from eagle_console.tui.panes.extraction import figures_text
    from eagle_console.tui.panes.results import rows

    text = figures_text({"total": 10, "done": 10, "rate_per_s": 15.0, "eta_s": 0, "output_bytes": 1,
                         "files": 1, "summary": {"samples": 10, "seconds": 12240.0}}).plain
    assert "finished: samples: 10, seconds: 12240" in text and "{" not in text
    [row] = rows([Result("0.4", 1, "tok_s", 12240.0, 0.0)], {"tok_s": 82.0})
    assert [c.plain for c in row[2:4]] == ["12240", "82"]
