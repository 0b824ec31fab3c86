"""The Metrics tab in the real App (run_test) over the simulated server's /metrics on 127.0.0.1: charts when
there is room, sparkline rows when not, the silent drafter's alarm in the pane and as a toast."""

from __future__ import annotations

import threading

from test_metrics_sim import load, metrics_server, plan_for, ready
from tuikit import drive, notices, open_app, screen_text, until


async def shown_metrics_pane(pilot, app):
    """Key 6 shows the Metrics tab; its pane once it is mounted (hidden tabs mount after the first frame)."""
    from eagle_console.tui.panes.metrics import MetricsPane

    await pilot.press("6")
    return await until(pilot, lambda: app.query(MetricsPane).first() if app.query(MetricsPane) else None,
                       what="the Metrics pane")


def test_metrics_tab_charts_and_alarm(tmp_path):
    with metrics_server(tmp_path, env={"EAGLE_SIM_ACCEPT": "none"}) as srv:
        stop = threading.Event()
        loader = load(ready(srv.url), stop)
        app, journal = open_app(plan_for(tmp_path, srv.url))

        async def scenario(pilot):
            pane = await shown_metrics_pane(pilot, app)
            pane.watch.hold_s = 2.0
            await until(pilot, lambda: pane.view is not None and pane.view.doc["accept_length"] is not None,
                        timeout=30, what="a reading with an accept length")
            await until(pilot, lambda: pane.charts["tok_s"].display and pane.charts["tok_s"].draws > 0,
                        timeout=30, what="the tok/s chart drawn")
            text = screen_text(app)
            assert "tok/s · red 82 base" in text and "accept len · red 4 max" in text
            assert "0.3 · " + srv.url + "/metrics · tp0" in text
            await until(pilot, lambda: "ACCEPT_LENGTH_ONE" in screen_text(app), timeout=30, what="the alarm")
            # the toast is a Notify message the App handles after the pane has drawn the alarm: wait for it
            await until(pilot, lambda: any(n.startswith("ACCEPT_LENGTH_ONE: accept length 1.00") for n in notices(app)),
                        timeout=10, what="the alarm's toast")
            assert "ERROR ACCEPT_LENGTH_ONE: accept length 1.00 for" in screen_text(app)

        try:
            drive(app, scenario, size=(120, 60))
        finally:
            stop.set()
            loader.join(30)
            journal.close()


def test_metrics_tab_at_80x24_is_sparklines(tmp_path):
    with metrics_server(tmp_path) as srv:
        stop = threading.Event()
        loader = load(ready(srv.url), stop)
        app, journal = open_app(plan_for(tmp_path, srv.url))

        async def scenario(pilot):
            pane = await shown_metrics_pane(pilot, app)
            await until(pilot, lambda: "accept " in str(pane.spark.render()), what="sparkline rows")
            assert not any(c.display for c in pane.charts.values())
            rows = str(pane.spark.render()).splitlines()
            assert rows[0].startswith("tok/s ") and "(baseline 82)" in rows[0]
            assert rows[1].startswith("accept ") and "(of 4)" in rows[1]
            assert all(len(r) <= pane.size.width for r in rows)

        try:
            drive(app, scenario, size=(80, 24))
        finally:
            stop.set()
            loader.join(30)
            journal.close()


RESULTS_PLAN = '''[plan]
id = "r"
title = "results"
baseline = { tok_s = 82.0 }

[[phase]]
id = "0"
title = "p"

  [[phase.step]]
  id = "0.4"
  title = "bench"
  run = "true"
'''


def test_results_tab_plots_each_run_against_the_baseline(tmp_path):
    plan = tmp_path / "plan.toml"
    plan.write_text(RESULTS_PLAN)
    app, journal = open_app(plan)
    for run, tok_s in ((1, 93.5), (2, 37.2), (3, 95.1)):  # the middle run: a silent drafter
        journal.record_result("0.4", run, "tok_s", tok_s)
        journal.record_result("0.4", run, "accept_length", 1.0 if tok_s < 50 else 2.6)

    async def scenario(pilot):
        from eagle_console.tui.panes.results_plot import RunsPlot

        await pilot.press("5")
        plot = await until(pilot, lambda: app.query(RunsPlot).first() if app.query(RunsPlot) else None,
                           what="the runs plot")
        await until(pilot, lambda: plot.chart.draws > 0, what="the runs chart drawn")
        text = screen_text(app)
        assert "tok/s per benchmark run · red 82 baseline" in text
        assert text.count("●") == 3

    try:
        drive(app, scenario, size=(120, 60))
    finally:
        journal.close()

    app, journal = open_app(plan)

    async def small(pilot):
        from eagle_console.tui.panes.results_plot import RunsPlot

        await pilot.press("5")
        plot = await until(pilot, lambda: app.query(RunsPlot).first() if app.query(RunsPlot) else None,
                           what="the runs plot")
        await until(pilot, lambda: plot.line.display, what="the one-row form at 80x24")
        assert not plot.chart.display
        assert "tok/s per run" in str(plot.line.render()) and "95.1 (baseline 82)" in str(plot.line.render())

    try:
        drive(app, small, size=(80, 24))
    finally:
        journal.close()
