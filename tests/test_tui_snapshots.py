"""Snapshots of the console's main screens, compared line by line with tests/snapshots/*.txt.

Deterministic by construction: the repo's Phase 0 plan, a journal written at a fixed instant in UTC by a
fixed operator, an 8-GPU simulated node with nothing on it (idle figures only), a fixed hostname, no
toasts, no text cursor on screen. The screen is compared as text (what the operator reads), not as SVG
colours: CI installs the newest Textual, and a theme tweak there must not fail our suite
(docs/decisions.md). Colour and glyph choices are asserted by the pane tests instead.

A change to a screen is reviewed by regenerating: EAGLE_CONSOLE_UPDATE_SNAPSHOTS=1 pytest
tests/test_tui_snapshots.py, then `git diff tests/snapshots`.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import time
from pathlib import Path

import pytest
from tuikit import screen_text, until

REPO = Path(__file__).resolve().parent.parent
SNAPSHOTS = Path(__file__).resolve().parent / "snapshots"
FIXED_AT = 1768464000.0  # 2026-01-15 08:00:00 UTC: not today, so times show with their date
UPDATE = bool(os.environ.get("EAGLE_CONSOLE_UPDATE_SNAPSHOTS"))


def assert_snapshot(name: str, text: str) -> None:
    path = SNAPSHOTS / f"{name}.txt"
    if UPDATE:
        SNAPSHOTS.mkdir(exist_ok=True)
        path.write_text(text)
        return
    assert path.exists(), f"no snapshot {path.name}: run with EAGLE_CONSOLE_UPDATE_SNAPSHOTS=1 and review it"
    want = path.read_text()
    if text != want:
        diff = [f"line {n}:\n  want {w!r}\n  got  {g!r}"
                for n, (w, g) in enumerate(zip(want.splitlines(), text.splitlines(), strict=False), 1) if w != g]
        raise AssertionError(f"{path.name} differs ({len(diff)} lines):\n" + "\n".join(diff[:8])
                             + f"\n--- got ---\n{text}")


@pytest.fixture
def node(tmp_path, monkeypatch):
    """The Phase 0 plan with a journal of fixed history, an idle simulated node, UTC, host `node1`."""
    from eagle_console.journal import Journal
    from eagle_console.plan.loader import load_plan
    from eagle_console.sim.gpustate import create_node

    monkeypatch.setenv("TZ", "UTC")
    time.tzset()
    monkeypatch.setenv("EAGLE_CONSOLE_GPU_BACKEND", "sim")
    monkeypatch.setattr("socket.gethostname", lambda: "node1")
    sim = tmp_path / "sim"
    create_node(sim, gpus=8)
    plan_path = tmp_path / "phase0.toml"
    shutil.copy(REPO / "plans" / "phase0-aqmedai-probe.toml", plan_path)
    plan = load_plan(plan_path)
    journal = Journal.for_plan(plan)
    with monkeypatch.context() as m:  # every event of this history at FIXED_AT
        m.setattr(time, "time", lambda: FIXED_AT)
        journal.mark("0.1", "completed", who="alice")
        journal.mark("0.2", "completed", note="max_position_embeddings 131072 → 262144", who="alice")
        journal.mark("0.2b", "failed", note="positions differ: 31748 of 163840", who="bob")
        journal.note("0.2b", "expected: AQ-MedAI maps K2's vocab, not K2.5's", who="bob")
        journal.record_result("0.4", None, "tok_s", 96.4)
        journal.record_result("0.4", None, "accept_length", 2.61)
    journal.close()
    yield plan_path, sim
    monkeypatch.undo()
    time.tzset()


def gpus_laid_out(app) -> bool:
    from eagle_console.tui.panes.gpus import GpuPane

    pane = app.query_one(GpuPane)
    return pane.last is not None and pane.query_one("#gpu-rows").size.height == len(pane.last.sample.gpus)


def shoot(node, size: tuple[int, int], *keys: str, settle=None):
    """Open the console, wait for the panes' first readings, press `keys`, return the screen as text."""
    from eagle_console.journal import Journal
    from eagle_console.plan.loader import load_plan
    from eagle_console.tui.app import make_app

    plan_path, sim = node
    plan = load_plan(plan_path)
    app = make_app(plan, Journal.for_plan(plan), sim_dir=sim)
    shot: list[str] = []

    async def main() -> None:
        async with app.run_test(size=size, notifications=False) as pilot:
            await until(pilot, lambda: app.snapshot is not None and app.ctx.selected_step_id == "0.1",
                        what="journal read and first step selected")
            # the header names the node's GPUs too: wait on the pane itself, its rows laid out
            await until(pilot, lambda: gpus_laid_out(app), what="the GPUs pane's first sample, laid out")
            await until(pilot, lambda: "no service log" in screen_text(app), what="the Server pane's first poll")
            for key in keys:
                await pilot.press(key)
                await pilot.pause()
            if settle is not None:
                await until(pilot, lambda: settle(screen_text(app)), what="the screen to settle")
            await pilot.pause(0.3)
            shot.append(screen_text(app))
        app.ctx.journal.close()

    asyncio.run(main())
    return shot[0]


@pytest.mark.parametrize("size", [(120, 40), (80, 24)], ids=["120x40", "80x24"])
def test_main_screen(node, size):
    text = shoot(node, size)
    assert_snapshot(f"main-{size[0]}x{size[1]}", text)


@pytest.mark.parametrize("size", [(120, 40), (80, 24)], ids=["120x40", "80x24"])
def test_help_screen(node, size):
    text = shoot(node, size, "question_mark", settle=lambda s: "Esc closes" in s)
    assert_snapshot(f"help-{size[0]}x{size[1]}", text)


@pytest.mark.parametrize("size", [(120, 40), (80, 24)], ids=["120x40", "80x24"])
def test_mark_dialog_on_a_failed_step(node, size):
    text = shoot(node, size, "down", "down", "m", settle=lambda s: "Mark 0.2b" in s)
    assert_snapshot(f"mark-0.2b-{size[0]}x{size[1]}", text)


@pytest.mark.parametrize("size", [(120, 40), (80, 24)], ids=["120x40", "80x24"])
def test_results_tab(node, size):
    text = shoot(node, size, "5", settle=lambda s: "96.4 " in s)
    assert_snapshot(f"results-{size[0]}x{size[1]}", text)
