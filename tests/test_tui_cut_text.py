"""Issue 32, "Cut text": what the console shows at 80x24 and 120x40 is whole where it is a sentence — the
NCCL finding and its legend (zoomed at 80x24), the note dialog's keys, the K dialog's commands (as wide as
the dialog lets them be), toasts that cover the Step pane's lines whole, and the GPU pane's holder rows
when the Detail line grows."""

from __future__ import annotations

import re

import pytest
from enginekit import write_plan
from tuikit import drive, open_app, screen_text, select, until

from eagle_console.sim import gpustate
from eagle_console.sim.server_logs import nccl_lines

NCCL_PLAN = """
[[phase]]
id = "0"
title = "Serve"

  [[phase.step]]
  id = "0.1"
  title = "Prepare"
  run = "true"

  [[phase.step]]
  id = "0.3"
  title = "Launch the server"
  service = true
  run = "sleep 1000"
  ready = { log = "fired up" }
"""
DEMO_ENV = {"NCCL_ALGO": "Ring", "NCCL_CUMEM_ENABLE": "0", "NCCL_PROTO": "LL"}  # the demo plan's


def pane_text(screen: str, left: int = 0) -> str:
    """The words of the screen's boxes from column `left` on, borders dropped, lines joined by a space:
    a sentence wrapped over several rows reads as one."""
    words = []
    for line in screen.splitlines():
        words += re.sub(r"[│╭╮╰╯─█▀▄▌▐▊▎▔▁]", " ", line[left:]).split()
    return " ".join(words)


def nccl_app(tmp_path, monkeypatch):
    """The console over a plan whose service wrote what the demo's 8-rank server writes (NCCL_DEBUG=INFO),
    on a simulated 8-GPU node (the GPU pane's reading names the cards: SHM_FALLBACK says which)."""
    monkeypatch.delenv("EAGLE_CONSOLE_GPU_BACKEND", raising=False)
    sim = tmp_path / "sim"
    gpustate.create_node(sim)
    app, journal = open_app(write_plan(tmp_path, NCCL_PLAN), sim_dir=sim)
    log = tmp_path / "server.log"
    log.write_text("".join(line + "\n" for rank in range(8)
                           for line in nccl_lines(rank, 8, list(range(8)), DEMO_ENV, "0x1", "0xbc63")))
    journal.begin_run("0.3", command="python -m sglang.launch_server", log=str(log), service=True)
    journal.close()
    return app


async def nccl_shown(pilot):
    from eagle_console.tui.panes.nccl import NcclPane

    app = pilot.app
    await select(pilot, "0.3")
    await pilot.press("2")
    pane = await until(pilot, lambda: app.query(NcclPane) and app.query_one(NcclPane), what="the NCCL pane")
    await until(pilot, lambda: pane.summary and any(f["code"] == "SHM_FALLBACK" and "RTX PRO 6000" in f["message"]
                                                    for f in pane.summary["findings"]),
                what="the SHM finding, naming the cards")
    return pane


@pytest.mark.parametrize("size", [(80, 24), (120, 40)], ids=["80x24-zoomed", "120x40"])
def test_the_nccl_finding_and_legend_show_whole_in_pairs(tmp_path, monkeypatch, size):
    app = nccl_app(tmp_path, monkeypatch)

    async def scenario(pilot):
        pane = await nccl_shown(pilot)
        if size == (80, 24):  # too short for the finding beside every other pane: z, z shows the log tabs alone
            await pilot.press("z", "z")
            await until(pilot, lambda: app.query_one("#logs").has_class("-zoomed"), what="the log tabs zoomed")
        await pilot.pause(0.3)
        screen = screen_text(app)
        text = pane_text(screen, left=0 if size == (80, 24) else app.query_one("#right").region.x)
        finding = next(f for f in pane.summary["findings"] if f["code"] == "SHM_FALLBACK")
        assert " ".join(finding["message"].split()) in text, screen  # whole: it was cut at 200 cells
        assert finding["message"].startswith("4 GPU pair(s) connect through SHM") and "(4 pair(s) use P2P)" in \
            finding["message"]
        assert "GPU pairs: 4 P2P, 4 SHM" in text, screen  # the finding's unit; was `P2P 8 SHM 8` (channels)
        assert "P2P 8" not in text and "SHM 8" not in text, screen
        assert "P=P2P S=SHM N=NET C=COLLNET .=none" in text, screen  # the legend: it was under the matrix, cut

    drive(app, scenario, size=size)


LONG_STEP_PLAN = """
[[phase]]
id = "0"
title = "Probe"

  [[phase.step]]
  id = "0.1"
  title = "Compare the drafters"
  description = "{words}"
  run = "true"

  [[phase.step]]
  id = "0.2"
  title = "Next"
  run = "true"
""".format(words="zebra " * 80)


@pytest.mark.parametrize("size", [(80, 24), (120, 40)], ids=["80x24", "120x40"])
def test_a_toast_covers_the_step_panes_lines_whole(tmp_path, size):
    """A toast narrower than the Step pane left the ends of the pane's lines standing beside it (`rafte`)."""
    app, journal = open_app(write_plan(tmp_path, LONG_STEP_PLAN))
    journal.close()

    async def scenario(pilot):
        await until(pilot, lambda: app.ctx.selected_step_id == "0.1", what="ready")
        app.notify("0.1 completed", timeout=30)
        toast = await until(pilot, lambda: app.screen.query("Toast") and app.screen.query_one("Toast"), what="a toast")
        await pilot.pause(0.3)
        step = app.query_one("#step-info").region
        assert toast.region.x == step.x + 1 and toast.region.right == step.right - 1, (toast.region, step)
        lines = screen_text(app).splitlines()
        for y in range(toast.region.y, toast.region.bottom):
            row = lines[y][step.x:step.right]
            assert "ebra" not in row and "zeb" not in row, "\n".join(lines)  # no fragment of the pane beside it

    drive(app, scenario, size=size)


@pytest.mark.parametrize("size", [(80, 24), (120, 40)], ids=["80x24", "120x40"])
def test_the_note_dialog_says_its_keys_whole(tmp_path, size):
    app, journal = open_app(write_plan(tmp_path, LONG_STEP_PLAN))
    journal.close()

    async def scenario(pilot):
        from eagle_console.tui.screens.note import NoteScreen

        await until(pilot, lambda: app.ctx.selected_step_id == "0.1", what="ready")
        await pilot.press("e")
        await until(pilot, lambda: isinstance(app.screen, NoteScreen), what="the note dialog")
        await pilot.pause(0.2)
        text = pane_text(screen_text(app))
        assert "a decision or an observation" in text, text
        assert "Esc cancel" in text and "Enter save" in text, text  # was a placeholder cut at `Esc to cance`
        await pilot.press("escape")

    drive(app, scenario, size=size)


@pytest.mark.parametrize("size", [(80, 24), (120, 40)], ids=["80x24", "120x40"])
def test_k_gives_the_commands_the_dialogs_width(tmp_path, monkeypatch, request, size):
    """K cut every command at 50 cells: at 120 columns with room to spare, at 80 past the dialog's edge
    (no … to say so). Each command now ends at the dialog's edge, with … where it is longer."""
    from test_tui_small import kill_app, orphan_node, scanned

    sim, pids = orphan_node(tmp_path, monkeypatch, request, 2)
    app = kill_app(tmp_path, sim)

    async def scenario(pilot):
        from eagle_console.tui.screens.kill import KillScreen

        await scanned(pilot, pids)
        await pilot.press("K")
        await until(pilot, lambda: isinstance(app.screen, KillScreen) and app.screen.state == "choosing", what="scan")
        await pilot.pause(0.3)
        screen = screen_text(app)
        insides = [line.split("█")[1] for line in screen.splitlines() if line.count("█") >= 2]  # the dialog's
        rows = [inside for inside in insides if inside.startswith("  [") and any(f" {p} " in inside for p in pids)]
        assert len(rows) == 2, screen
        for inside in rows:
            shown = inside.rstrip()
            assert shown.endswith("…"), screen  # the orphans' commands are longer than any width here
            assert len(inside) - len(shown) <= 4, screen  # and take the width there is
        await pilot.press("escape")

    drive(app, scenario, size=size)


def test_a_growing_detail_line_leaves_the_gpu_pane_its_orphan_rows_at_80x24(tmp_path, monkeypatch, request):
    """A note on the selected step makes the Detail line grow to its most rows: those rows came out of the
    GPU pane's holder rows (the orphans K would kill) rather than out of the log tabs."""
    from test_tui_small import KILL_PLAN, orphan_node, ready

    from eagle_console.journal import Journal
    from eagle_console.plan.loader import load_plan

    sim, pids = orphan_node(tmp_path, monkeypatch, request, 2)
    path = write_plan(tmp_path, KILL_PLAN)
    app, journal = open_app(path, sim_dir=sim)
    journal.close()

    async def scenario(pilot):
        await ready(pilot, pids)  # both orphans on screen, the Detail line at two rows
        note = Journal.for_plan(load_plan(path))
        note.note("0.1", "seen twice after a reboot: the schedulers of last night's run; " * 4)
        note.close()
        await until(pilot, lambda: app.detail.outer_size.height >= 4, what="the Detail line grown by the note")
        await pilot.pause(0.5)
        screen = screen_text(app)
        assert {int(p) for p in re.findall(r"│ (\d+) +\d +\d+ orphan ", screen)} == set(pids), screen
        detail = screen.splitlines()[-1 - app.detail.outer_size.height:-1]
        assert detail[-1].rstrip().endswith("…"), screen  # the note is cut, and says so

    drive(app, scenario, size=(80, 24))


def test_the_demos_0_2b_detail_is_whole_at_80x24(tmp_path, monkeypatch):
    """0.2b's vocab verdict ended mid-sentence (`putting one drafter's`) where the Detail line stopped."""
    from eagle_console.demo.build import build_demo, stop_leftovers
    from eagle_console.ops.console import drafter_lines

    plan_path = build_demo(tmp_path, orphans=0)
    monkeypatch.setenv("EAGLE_CONSOLE_SIM", str(tmp_path / "sim"))
    app, journal = open_app(plan_path, sim_dir=tmp_path / "sim")
    journal.close()
    [want] = drafter_lines(app.ctx.plan, "0.2b")  # what the Detail line is given to show

    async def scenario(pilot):
        await select(pilot, "0.2b")
        await until(pilot, lambda: "vocab:" in app.detail.render().plain, what="the vocab verdict")
        await pilot.pause(0.3)
        screen = screen_text(app)
        detail = " ".join(" ".join(screen.splitlines()[-1 - app.detail.outer_size.height:-1]).split())
        assert want.startswith("vocab: ") and want.endswith("."), want  # a sentence
        assert want in detail, screen
        assert "…" not in detail.split("vocab:")[1], screen

    try:
        drive(app, scenario, size=(80, 24))
    finally:
        stop_leftovers(tmp_path)


def test_under_a_dialog_the_toasts_keep_to_the_step_pane(tmp_path):
    """A dialog has a toast rack of its own: the toasts moved there, over the Detail line and across the
    whole screen (capture 05 at 80x24: the rollback dialog)."""
    app, journal = open_app(write_plan(tmp_path, LONG_STEP_PLAN))
    journal.close()

    async def scenario(pilot):
        from eagle_console.tui.screens.note import NoteScreen

        await until(pilot, lambda: app.ctx.selected_step_id == "0.1", what="ready")
        for n in range(3):
            app.notify(f"notice {n}", timeout=30)
        await until(pilot, lambda: len(app.screen.query("Toast")) == 3, what="3 toasts")
        await pilot.press("e")
        await until(pilot, lambda: isinstance(app.screen, NoteScreen), what="a dialog")
        toasts = await until(pilot, lambda: [t for t in app.screen.query("Toast") if t.region.area] or None,
                             what="the toasts on the dialog")
        await pilot.pause(0.3)
        step, detail = app.step_info.region, app.detail.region
        for toast in app.screen.query("Toast"):
            assert not toast.region.overlaps(detail), (toast.region, detail)
            assert toast.region.x == step.x + 1 and toast.region.right == step.right - 1, (toast.region, step)
        assert toasts
        await pilot.press("escape")

    drive(app, scenario, size=(80, 24))
