"""The console at 80x24 (an ssh window) and 120x40: every GPU and the orphans on the main screen, the kill's
result and keys in its dialog, what a step is and what running it will do, keys, help, palette, zoom."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest
from enginekit import write_plan
from test_tui_panes_gpus import stop_pids
from tuikit import drive, open_app, screen_text, select, until

from eagle_console.sim import gpustate
from eagle_console.sim.orphans import leave_orphans
from eagle_console.tui.panes.logs import TABS

REPO = Path(__file__).resolve().parent.parent
KILL_PLAN = """
[[phase]]
id = "0"
title = "Probe"

  [[phase.step]]
  id = "0.1"
  title = "Kill any existing server processes"
  description = "Earlier sessions left orphaned schedulers holding GPU memory."
  uses = "gpu.kill"
  with = { scope = "orphans", grace = "2s" }

  [[phase.step]]
  id = "0.2"
  title = "Check the cabling of the node by hand, then write down what the label on rack B says"
  description = "Open rack B; the PCIe risers must sit flush. Note the serial on the label."

  [[phase.step]]
  id = "0.3"
  title = "Benchmark"
  run = "true"
"""


def orphan_node(tmp_path, monkeypatch, request, count: int):
    monkeypatch.delenv("EAGLE_CONSOLE_GPU_BACKEND", raising=False)
    monkeypatch.setenv("EAGLE_CONSOLE_KILL_GRACE", "1")
    sim = tmp_path / "sim"
    gpustate.create_node(sim)
    pids = leave_orphans(sim, count)
    request.addfinalizer(lambda: stop_pids(pids))
    return sim, pids


@pytest.fixture
def two_orphans(tmp_path, monkeypatch, request):
    return orphan_node(tmp_path, monkeypatch, request, 2)


def kill_app(tmp_path, sim):
    app, journal = open_app(write_plan(tmp_path, KILL_PLAN), sim_dir=sim)
    journal.close()
    return app


async def ready(pilot, pids) -> str:
    app = pilot.app
    await until(pilot, lambda: app.snapshot is not None and app.ctx.selected_step_id == "0.1", what="ready")
    return await until(pilot, lambda: (lambda s: s if all(str(p) in s for p in pids) else None)(screen_text(app)),
                       what="the orphans on the main screen")


async def scanned(pilot, pids) -> None:
    """The GPU pane has read the orphans (whether or not it shows them)."""
    app = pilot.app
    await until(pilot, lambda: app.snapshot is not None and app.ctx.selected_step_id == "0.1", what="ready")
    await until(pilot, lambda: app.gpus.last and set(pids) <= {h.pid for h in app.gpus.last.holders},
                what="the orphans read")


def test_80x24_shows_all_eight_gpus_and_the_orphans(tmp_path, two_orphans):
    sim, pids = two_orphans
    app = kill_app(tmp_path, sim)

    async def scenario(pilot):
        text = await ready(pilot, pids)
        rows = set(re.findall(r"│ (\d) [█░]+ +\d+\.\d/95\.6G", text))
        assert rows == {str(i) for i in range(8)}, text
        assert {int(p) for p in re.findall(r"│ (\d+) +\d +\d+ orphan ", text)} == set(pids), text

    drive(app, scenario, size=(80, 24))


def test_120x40_gpu_holders_show_eight_processes(tmp_path, monkeypatch, request):
    sim, pids = orphan_node(tmp_path, monkeypatch, request, 8)
    app = kill_app(tmp_path, sim)

    async def scenario(pilot):
        await ready(pilot, pids)  # all eight pids, not two of them

    drive(app, scenario, size=(120, 40))


def test_80x24_kill_from_the_keys_shows_the_result_and_the_keys(tmp_path, two_orphans):
    sim, pids = two_orphans
    app = kill_app(tmp_path, sim)

    async def scenario(pilot):
        from eagle_console.tui.screens.kill import KillScreen

        await scanned(pilot, pids)
        await pilot.press("K")
        await until(pilot, lambda: isinstance(app.screen, KillScreen) and app.screen.state == "choosing", what="scan")
        assert "enter send SIGTERM" in screen_text(app)  # the keys fit
        await pilot.press("enter")
        await until(pilot, lambda: app.screen.state == "done", timeout=30, what="kill done")
        await pilot.pause(0.2)
        text = screen_text(app)
        assert "killed 2" in text and "freed 12240 MiB" in text, text
        assert "enter / esc close" in text and "Enter sends SIGTERM" not in text, text

    drive(app, scenario, size=(80, 24))


def test_gpu_kill_confirmation_lists_what_it_would_signal(tmp_path, two_orphans):
    sim, pids = two_orphans
    app = kill_app(tmp_path, sim)

    async def scenario(pilot):
        await scanned(pilot, pids)
        await pilot.press("r")
        text = await until(pilot, lambda: (lambda s: s if "SIGTERM" in s else None)(screen_text(app)),
                           what="the processes it would signal")
        assert "Run 0.1" in text and "scope orphans · grace 2s" in text, text
        for pid in pids:
            assert f"SIGTERM {pid} orphan" in text, text
        assert "GPU 3 6120 MiB" in text and "Enter confirm" in text, text
        await pilot.press("escape")

    drive(app, scenario, size=(80, 24))


def test_the_step_pane_shows_the_whole_title_the_instructions_and_what_u_does(tmp_path):
    app, journal = open_app(write_plan(tmp_path, KILL_PLAN))
    journal.close()

    async def scenario(pilot):
        await until(pilot, lambda: app.ctx.selected_step_id == "0.1", what="ready")
        text = screen_text(app)
        assert "u rollback: marks rolled back" in text, text  # gpu.kill's undo is a mark, not "built-in undo"
        await select(pilot, "0.2")
        await pilot.pause(0.1)
        text = " ".join(" ".join(line.split("│")[1:2]).strip() for line in screen_text(app).splitlines())
        assert "then write down what the label on rack B says" in text, text  # the tree cuts it, not here
        assert "the PCIe risers must sit flush" in text and "manual: do it by hand" in text, text

    drive(app, scenario, size=(80, 24))


def test_toasts_leave_the_detail_line_and_the_gpus_uncovered(tmp_path):
    app, journal = open_app(write_plan(tmp_path, KILL_PLAN))
    journal.close()

    async def scenario(pilot):
        await until(pilot, lambda: app.ctx.selected_step_id == "0.1", what="ready")
        app.notify("a notice long enough to take a few lines of a toast at eighty columns", timeout=30)
        toasts = await until(pilot, lambda: list(app.screen.query("Toast")), what="a toast")
        await pilot.pause(0.2)
        for toast in toasts:
            for pane in ("#detail", "#gpus", "#plan"):
                assert not toast.region.overlaps(app.query_one(pane).region), pane

    drive(app, scenario, size=(80, 24))


def test_j_and_k_move_in_the_plan(tmp_path):
    app, journal = open_app(write_plan(tmp_path, KILL_PLAN))
    journal.close()

    async def scenario(pilot):
        await until(pilot, lambda: app.ctx.selected_step_id == "0.1", what="ready")
        await pilot.press("j")
        await until(pilot, lambda: app.ctx.selected_step_id == "0.2", what="j moved down")
        await pilot.press("k")
        await until(pilot, lambda: app.ctx.selected_step_id == "0.1", what="k moved up")

    drive(app, scenario, size=(80, 24))


def test_help_lists_the_dialogs_keys_and_every_palette_command(tmp_path):
    from eagle_console.tui.commands import ACTIONS

    app, journal = open_app(write_plan(tmp_path, KILL_PLAN))
    journal.close()

    async def scenario(pilot):
        await until(pilot, lambda: app.ctx.selected_step_id == "0.1", what="ready")
        await pilot.press("question_mark")
        await until(pilot, lambda: app.screen.query("#help-keys"), what="help")
        text = "\n".join(str(w.render()) for w in app.screen.query("Static"))
        for key in ("space select", "y / n", "c with or without its dependents", "End follows again", "j k"):
            assert key in text, key
        for _key, _action, title, _help in ACTIONS:
            assert title in text, title
        assert "Show the Results tab" in text and "Export plan (json)" in text

    drive(app, scenario, size=(80, 24))


def test_the_palette_offers_every_keys_action(tmp_path):
    from eagle_console.tui import keys
    from eagle_console.tui.commands import palette_entries

    app, journal = open_app(write_plan(tmp_path, KILL_PLAN))
    journal.close()

    async def scenario(pilot):
        await until(pilot, lambda: app.ctx.selected_step_id == "0.1", what="ready")
        called = {getattr(call, "args", (None,))[0] for _text, call, _help in palette_entries(app)}
        bound = {b.action for b in keys.BINDINGS}
        tabs = {a for a in bound if a.startswith("tab(")}
        assert bound - tabs <= called, bound - tabs - called
        assert {t for t, *_ in palette_entries(app) if t.startswith("Show the ")} and len(tabs) == len(TABS)

    drive(app, scenario, size=(80, 24))


def test_z_shows_one_pane_alone_then_the_next_then_all(tmp_path):
    app, journal = open_app(write_plan(tmp_path, KILL_PLAN))
    journal.close()

    async def scenario(pilot):
        await until(pilot, lambda: app.ctx.selected_step_id == "0.1", what="ready")
        gpus, logs, plan = (app.query_one(p) for p in ("#gpus", "#logs", "#plan"))
        await pilot.press("z")
        await pilot.pause(0.1)
        assert gpus.outer_size.width == 80 and gpus.size.height >= 18 and not plan.display and not logs.display
        await pilot.press("z")
        await pilot.pause(0.1)
        assert logs.outer_size.width == 80 and not gpus.display
        for _ in range(3):  # plan, step, then every pane again
            await pilot.press("z")
        await pilot.pause(0.1)
        assert gpus.display and logs.display and plan.display and plan.size.width < 60

    drive(app, scenario, size=(80, 24))


def test_80x24_results_keep_their_values_on_screen(tmp_path):
    app, journal = open_app(write_plan(tmp_path, 'baseline = { tok_s = 82.0 }\n' + KILL_PLAN))

    async def scenario(pilot):
        await until(pilot, lambda: app.ctx.selected_step_id == "0.1", what="ready")
        journal.record_result("0.3", None, "vocab_positions_differ", 31748.0)
        journal.record_result("0.3", None, "tok_s", 101.25)
        await pilot.press("5")
        text = await until(pilot, lambda: (lambda s: s if "tok_s" in s.split("RESULT")[-1] and "vocab_" in
                                            s.split("RESULT")[-1] else None)(screen_text(app)),
                           what="both results in the table")
        table = text.split("RESULT")[-1]
        assert "31748" in table and "31748.00" not in table and "101.25" in table, text

    try:
        drive(app, scenario, size=(80, 24))
    finally:
        journal.close()


def test_snapshot_plan_copy_is_the_repos(tmp_path):
    """The snapshots' plan is the repo's Phase 0 plan: its 0.1 description shows in the Step pane."""
    shutil.copy(REPO / "plans" / "phase0-aqmedai-probe.toml", tmp_path / "p.toml")
    app, journal = open_app(tmp_path / "p.toml")
    journal.close()

    async def scenario(pilot):
        await until(pilot, lambda: app.ctx.selected_step_id == "0.1", what="ready")
        assert "orphaned sglang schedulers" in str(app.query_one("#step-info-text").render())

    drive(app, scenario, size=(120, 40))


def test_many_toasts_stay_inside_the_step_pane_at_80x24(tmp_path):
    """A walk through Phase 0 raises a toast per start and end: stacked, they climbed over the Plan tree's
    rows (issue #17 capture). The rack is kept to the Step pane's height and shows the newest."""
    app, journal = open_app(write_plan(tmp_path, KILL_PLAN))
    journal.close()

    async def scenario(pilot):
        await until(pilot, lambda: app.ctx.selected_step_id == "0.1", what="ready")
        before = screen_text(app).splitlines()
        plan_rows = [r for r in before if re.search(r"── . +0\.\d ", r)]
        assert len(plan_rows) == 3, before
        for n in range(16):
            app.notify(f"notice {n}", timeout=30)
        await until(pilot, lambda: len(app.screen.query("Toast")) == 16, what="16 toasts")
        await pilot.pause(0.3)
        after = screen_text(app)
        for row in plan_rows:
            assert row.split("│")[1] in after, after  # the Plan tree's rows are all still readable
        assert "notice 15" in after, after  # the newest shows
        step = app.query_one("#step-info").region
        shown = [t.region for t in app.screen.query("Toast") if t.region.area]
        assert shown and all(step.contains_region(r) for r in shown), (step, shown)

    drive(app, scenario, size=(80, 24))


def test_a_late_detail_resized_while_tearing_down_does_not_crash(tmp_path):
    """CI (Textual 6.0 floors) saw DetailResized (now ToastRoomChanged) handled after the key line was
    already removed at exit: `NoMatches: KeyBar` crashed the console's teardown. Reproduced by removing the
    key line first."""
    from eagle_console.tui.messages import ToastRoomChanged

    app, _journal = open_app(write_plan(tmp_path, KILL_PLAN))

    async def scenario(pilot):
        await until(pilot, lambda: app.ctx.selected_step_id is not None, what="ready")
        await app.query_one("KeyBar").remove()
        app.detail.post_message(ToastRoomChanged())
        await pilot.pause(0.2)
        assert app.is_running

    drive(app, scenario, size=(80, 24))


def test_toasts_stay_inside_the_step_pane_when_a_phase_unfolds(tmp_path):
    """The Plan tree is as tall as its open rows, so unfolding a phase shrinks the Step pane under it; the
    toasts were fitted to the Step pane only on a terminal resize, a selection move or the Detail line's
    resize, and a stack fitted before the unfold climbed over the new Plan rows."""
    plan = KILL_PLAN + "".join(f'\n[[phase]]\nid = "{p}"\ntitle = "More {p}"\n' + "".join(
        f'  [[phase.step]]\n  id = "{p}.{i}"\n  title = "step {p}.{i}"\n  run = "true"\n' for i in range(1, 4))
        for p in (1, 2))
    app, journal = open_app(write_plan(tmp_path, plan))
    journal.close()

    async def scenario(pilot):
        from textual.widgets import Tree

        await until(pilot, lambda: app.ctx.selected_step_id == "0.1", what="ready")
        tree = app.query_one("#plan", Tree)
        phases = [n for n in tree.root.children if n.data in ("1", "2")]
        for node in phases:
            node.collapse()
        await pilot.pause(0.3)
        for n in range(16):
            app.notify(f"notice {n}", timeout=30)
        await until(pilot, lambda: len(app.screen.query("Toast")) == 16, what="16 toasts")
        await pilot.pause(0.3)
        for node in phases:
            node.expand()
        await pilot.pause(0.5)
        step = app.query_one("#step-info").region
        shown = [t.region for t in app.screen.query("Toast") if t.region.area]
        assert shown and all(step.contains_region(r) for r in shown), (step, shown)

    drive(app, scenario, size=(80, 24))
