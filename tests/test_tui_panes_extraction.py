"""Extraction pane on a running `python -m eagle_console.sim.extract`; Results pane from journal results."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import textwrap

import clikit
from textual.app import App
from textual.widgets import DataTable, ProgressBar
from tuikit import until

from eagle_console.journal import Journal
from eagle_console.plan.loader import load_plan
from eagle_console.tui.context import ConsoleContext
from eagle_console.tui.panes.extraction import ExtractionPane
from eagle_console.tui.panes.results import ResultsPane, delta


def plan_ctx(tmp_path, total: int, select: str | None = None) -> ConsoleContext:
    path = tmp_path / "plan.toml"
    path.write_text(textwrap.dedent(f"""
        [plan]
        id = "x"
        title = "extraction"
        baseline = {{ tok_s = 82.0, ttft_ms_median = 200.0 }}

        [[phase]]
        id = "2"
        title = "extract"

        [[phase.step]]
        id = "2.1"
        title = "bench"
        run = "true"

        [[phase.step]]
        id = "2.2"
        title = "extract hidden states"
        run = "true"
        watch = {{ extraction = {{ log = "extract.log", output = "out", pattern = "*.safetensors", total = {total} }} }}
        """))
    plan = load_plan(path)
    return ConsoleContext(plan_path=path, plan=plan, journal=Journal.for_plan(plan), selected_step_id=select)


class OneApp(App):
    def __init__(self, pane) -> None:
        super().__init__()
        self.pane = pane

    def compose(self):
        yield self.pane


def start_extract(tmp_path, *args: str) -> subprocess.Popen:
    log = open(tmp_path / "extract.log", "w")
    return subprocess.Popen([sys.executable, "-m", "eagle_console.sim.extract", "--out", str(tmp_path / "out"), *args],
                            stdout=log, stderr=subprocess.STDOUT)


def test_progress_rate_and_finish_of_a_running_extraction(tmp_path, request):
    ctx = plan_ctx(tmp_path, total=30, select="2.1")  # a step without a watch: the last watched one is shown
    job = start_extract(tmp_path, "--samples", "30", "--rate", "40")
    request.addfinalizer(lambda: (job.kill(), job.wait()))
    pane = ExtractionPane(ctx, refresh_s=0.2)
    app = OneApp(pane)
    seen: list[int] = []

    async def main() -> None:
        async with app.run_test(size=(100, 30)) as pilot:
            def progressed():
                if pane.last:
                    seen.append(pane.last["done"])
                return pane.last and pane.last["summary"] is not None
            await until(pilot, progressed, timeout=30, what="extraction finished")
            assert pane.watching == "2.2"
            r = pane.last
            assert r["done"] == 30 and r["total"] == 30 and r["files"] == 30 and r["fits"] is True
            bar = pane.query_one(ProgressBar)
            assert bar.total == 30 and bar.progress == 30
            figures = str(pane.query_one("#ex-figures").render())
            assert "samples 30/30" in figures and "fits: yes" in figures and "/dev/shm" in figures
            assert not pane.query_one("#ex-warning").has_class("-shown")

    asyncio.run(main())
    assert len(set(seen)) >= 2  # it was watched while running, not only at the end


def never_fitting(tmp_path, request) -> tuple[ExtractionPane, OneApp]:
    """The pane on a running extraction that can never fit: 100k samples of 100 GB (sparse files)."""
    ctx = plan_ctx(tmp_path, total=100_000, select="2.2")
    job = start_extract(tmp_path, "--samples", "100000", "--rate", "20", "--bytes-per-sample", str(100 * 10**9))
    request.addfinalizer(lambda: (job.kill(), job.wait()))
    pane = ExtractionPane(ctx, refresh_s=0.2)
    return pane, OneApp(pane)


def test_does_not_fit_is_prominent(tmp_path, request):
    pane, app = never_fitting(tmp_path, request)

    async def main() -> None:
        async with app.run_test(size=(100, 30)) as pilot:
            await until(pilot, lambda: pane.last and pane.last["files"] >= 3, what="3 files")
            warning = pane.query_one("#ex-warning")
            assert pane.last["fits"] is False and warning.has_class("-shown")
            assert str(warning.render()).startswith("DOES NOT FIT")

    asyncio.run(main())


def test_a_narrow_short_pane_keeps_rate_eta_and_fit_above_the_warning(tmp_path, request):
    """At 80x24 the pane has ~34 cells by ~7 rows: the DOES NOT FIT warning on top pushed the samples, rate,
    ETA and sizes off it (issue #17). The key figures come first now; the warning under them."""
    from tuikit import screen_text

    pane, app = never_fitting(tmp_path, request)

    async def main() -> None:
        async with app.run_test(size=(34, 7)) as pilot:
            await until(pilot, lambda: pane.last and pane.last["files"] >= 3 and pane.last["rate_per_s"],
                        what="3 files and a rate")
            await pilot.pause(0.3)
            text = screen_text(app)
            assert "ETA" in text and "/s" in text and "fits: NO" in text, text
            figures, warning = pane.query_one("#ex-figures"), pane.query_one("#ex-warning")
            assert warning.has_class("-shown") and figures.region.y < warning.region.y

    asyncio.run(main())


def test_results_against_baseline(tmp_path):
    ctx = plan_ctx(tmp_path, total=10)
    ctx.journal.record_result("2.1", None, "tok_s", 101.0)
    ctx.journal.record_result("2.1", None, "ttft_ms_median", 250.0)
    pane = ResultsPane(ctx, refresh_s=0.2)
    app = OneApp(pane)

    async def main() -> None:
        async with app.run_test(size=(100, 30)) as pilot:
            table = pane.query_one(DataTable)
            await until(pilot, lambda: table.row_count == 2, what="2 results")
            cells = [[str(c) for c in table.get_row_at(i)] for i in range(2)]  # newest first
            # figures.format_value; a tok_s without a decode_tok_s beside it is compared as it is, and labelled
            assert cells[1][:5] == ["2.1", "tok_s end-to-end", "101", "82", "+23.2%"]
            assert cells[0][4] == "+25.0%"
            headline = str(pane.query_one("#results-headline").render())
            assert "tok_s 101 end-to-end vs 82 baseline +23.2%" in headline
            ctx.journal.record_result("2.2", None, "accept_length", 2.4)  # no baseline: no delta
            await until(pilot, lambda: table.row_count == 3, what="a third result")
            assert [str(c) for c in table.get_row_at(0)][4] == ""
            await until(pilot, lambda: "accept_length 2.4 " in str(pane.query_one("#results-headline").render()),
                        what="accept length in the headline")

    asyncio.run(main())
    assert delta("tok_s", 70.0, {"tok_s": 82.0}) == ("-14.6%", "ec.error")
    assert delta("ttft_ms_median", 150.0, {"ttft_ms_median": 200.0}) == ("-25.0%", "ec.ok")


def cli_figures(tmp_path) -> dict:
    """What `eagle-console extraction LOG --json` says at this moment (a process of its own)."""
    import json

    out = clikit.run(["extraction", tmp_path / "extract.log", "--total", "60", "--json"], timeout=60)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)


def test_rate_is_the_runs_own_and_matches_the_cli(tmp_path, request):
    """Issue #18: the pane said 0.10/s for a job the CLI saw at 15/s (its window reached back before the run
    started) and kept drifting after the end. Now: within 10 % of the CLI's during the run, frozen after."""
    ctx = plan_ctx(tmp_path, total=60, select="2.2")
    (tmp_path / "extract.log").write_text("")  # the console watched an idle log for a while first
    pane = ExtractionPane(ctx, refresh_s=0.2)
    app = OneApp(pane)
    procs: list[subprocess.Popen] = []
    request.addfinalizer(lambda: [(p.kill(), p.wait()) for p in procs])

    async def main() -> None:
        async with app.run_test(size=(100, 30)) as pilot:
            await until(pilot, lambda: pane.last is not None and pane.last["done"] == 0, what="the idle log read")
            await pilot.pause(3.0)
            procs.append(start_extract(tmp_path, "--samples", "60", "--rate", "15"))
            await until(pilot, lambda: pane.last and pane.last["done"] >= 20, timeout=30, what="20 samples")
            cli = cli_figures(tmp_path)
            ours = pane.last["rate_per_s"]
            assert cli["rate_per_s"] is not None and ours is not None
            assert abs(ours - cli["rate_per_s"]) <= 0.1 * cli["rate_per_s"], (ours, cli["rate_per_s"])
            assert "/s" in str(pane.query_one("#ex-figures").render())
            await until(pilot, lambda: pane.last and pane.last["summary"] is not None, timeout=30, what="the end")
            ended = pane.last["rate_per_s"]
            await pilot.pause(1.5)
            assert pane.last["rate_per_s"] == ended  # frozen once the run ended
            assert cli_figures(tmp_path)["rate_per_s"] == ended
            assert abs(ended - 15.0) <= 1.5

    asyncio.run(main())
