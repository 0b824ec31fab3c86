"""Above the Results table: every benchmark run's decode tok/s as a bar, against the plan's baseline (the red
line). Where the pane is too short for a chart and the table both, one sparkline row says the same."""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import TYPE_CHECKING

from rich.text import Text
from textual.containers import Vertical
from textual.widgets import Static

from eagle_console.sparkline import sparkline
from eagle_console.tui.theme import tstyle

if TYPE_CHECKING:
    from collections.abc import Mapping

    from eagle_console.journal.records import Result

FIGURE = "tok_s"  # what sglang.bench records and plan.baseline names (ops/metrics.BASELINE_KEY)
CHART_ROWS = 10
MIN_PANE_ROWS = 22  # below this the table keeps the room and the runs are one sparkline row
MAX_RUNS = 12  # the newest runs; older ones stay in the table


def runs(results: Sequence[Result]) -> list[tuple[str, float]]:
    """(label, tok/s) per benchmark run, oldest first: `0.4 10:41` (step and time of the run)."""
    out = []
    for r in results:
        if r.name == FIGURE and isinstance(r.value, (int, float)):
            out.append((f"{r.step_id} {time.strftime('%H:%M', time.localtime(r.at))}", float(r.value)))
    return out[-MAX_RUNS:]


class RunsPlot(Vertical):
    DEFAULT_CSS = """
    RunsPlot { height: auto; }
    RunsPlot > #runs-line { height: auto; padding: 0 1; }
    RunsPlot > Chart { height: 10; }
    """

    def compose(self):
        from eagle_console.tui.panes.charts import Chart

        self.line = Static("", id="runs-line", markup=False)
        self.chart = Chart("tok/s per run", xlabel="")
        yield self.line
        yield self.chart

    def show(self, results: Sequence[Result], baseline: Mapping[str, float], pane_rows: int) -> None:
        from eagle_console.tui.panes.charts import Line, Series

        found = runs(results)
        base = baseline.get(FIGURE)
        roomy = pane_rows >= MIN_PANE_ROWS
        self.display = bool(found) and (roomy or len(found) > 1)
        self.chart.display = bool(found) and roomy
        # one run: the headline above already says its tok/s against the baseline
        self.line.display = len(found) > 1 and not roomy
        if not found:
            return
        values = [v for _l, v in found]
        note = f" (baseline {base:g})" if base else ""
        self.line.update(Text(f"tok/s per run {sparkline(values)} {values[-1]:.1f}{note}", style=tstyle("ec.other")))
        if roomy:
            self.chart.title = "tok/s per benchmark run" + (f" · red {base:g} baseline" if base else "")
            top = max(values + ([base] if base else [])) * 1.15
            xs = list(range(1, len(found) + 1))
            self.chart.show(xs, [Series("", values, "cyan", "●")], [Line(base, "baseline")] if base else [],
                            (0.0, top), xticks=[(x, label) for x, (label, _v) in zip(xs, found, strict=True)])
