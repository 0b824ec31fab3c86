"""The console on the demo node at 120x36 and at 80x24: it renders the whole plan and the frame.

With EAGLE_CONSOLE_WRITE_SCREENSHOT=1 the 120x36 screen is saved as docs/screenshot.svg.
"""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

import pytest

DOCS = Path(__file__).resolve().parent.parent / "docs"


@pytest.fixture
def demo(tmp_path, monkeypatch):
    from eagle_console.demo.build import build_demo, stop_leftovers

    monkeypatch.setenv("EAGLE_CONSOLE_KILL_GRACE", "1")
    plan_path = build_demo(tmp_path)
    monkeypatch.setenv("EAGLE_CONSOLE_SIM", str(tmp_path / "sim"))
    yield plan_path, tmp_path / "sim"
    stop_leftovers(tmp_path)


def open_demo(plan_path: Path, sim: Path):
    from eagle_console.journal import Journal
    from eagle_console.plan.loader import load_plan
    from eagle_console.tui.app import make_app

    plan = load_plan(plan_path)
    return make_app(plan, Journal.for_plan(plan), sim_dir=sim), plan


@pytest.mark.parametrize("size", [(120, 36), (80, 24)])
def test_the_demo_renders_every_step(demo, size, tmp_path):
    from eagle_console.tui.panes.plan_tree import PlanPane

    app, plan = open_demo(*demo)
    shot = tmp_path / f"shot-{size[0]}x{size[1]}.svg"

    async def main() -> None:
        async with app.run_test(size=size) as pilot:
            await pilot.pause(1.0)  # the first journal poll and the panes' first samples
            pane = app.query_one(PlanPane)
            for step in plan.steps():
                assert step.id in pane._item_nodes
                text = str(pane._item_nodes[step.id].label)
                assert text.startswith("○") and step.id in text
                # at 80 columns the title is ellipsised, never wrapped or cut mid-marker
                assert len(text) <= pane.size.width, text
            assert plan.id in str(app.query_one("#header").content)
            app.save_screenshot(filename=shot.name, path=str(shot.parent))
            if size == (120, 36) and os.environ.get("EAGLE_CONSOLE_WRITE_SCREENSHOT"):
                app.save_screenshot(filename="screenshot.svg", path=str(DOCS))

    asyncio.run(main())
    svg = shot.read_text()
    assert "<svg" in svg and "eagle" in svg


def test_detail_shows_drafter_findings_and_vocab_comparison(demo):
    from eagle_console.tui.panes.detail import DetailLine
    from eagle_console.tui.panes.plan_tree import PlanPane

    app, plan = open_demo(*demo)

    async def main() -> None:
        async with app.run_test(size=(120, 36)) as pilot:
            await pilot.pause()
            detail = app.query_one(DetailLine)
            for step_id, expected in (("0.2", "drafter check"), ("0.2b", "vocab:")):
                app.query_one(PlanPane).select_id(step_id)
                for _ in range(200):
                    await pilot.pause(0.05)
                    if expected in str(detail.content):
                        break
                text = str(detail.content)
                assert text.startswith(step_id) and expected in text, text

    asyncio.run(main())


def test_palette_offers_run_rollback_kill_and_export(demo):
    from eagle_console.tui.commands import palette_entries

    app, plan = open_demo(*demo)
    exports = ["Export plan (todowrite)", "Export plan (markdown)", "Export plan (json)"]

    async def main() -> None:
        async with app.run_test(size=(120, 36)):
            texts = [t for t, _, _ in palette_entries(app)]
            assert "Run step 0.1 " + plan.step("0.1").title in texts
            assert "Mark step 0.1 " + plan.step("0.1").title in texts
            assert any(t.startswith("Roll back phase 0 ") for t in texts)
            assert "Roll back step 0.1 " + plan.step("0.1").title in texts
            assert "Kill orphaned GPU workers" in texts
            assert texts[-3:] == exports
            app.ctx.readonly = True  # only what changes nothing: the looking keys and the exports
            readonly = [t for t, _, _ in palette_entries(app)]
            assert readonly[-3:] == exports and "Zoom: one pane alone" in readonly
            assert not [t for t in readonly if t.startswith(("Run", "Mark", "Roll back", "Kill", "Note"))]

    asyncio.run(main())
