"""The Results pane: every recorded result by step in a DataTable, against plan.baseline (delta %).

The journal is read in a worker every 2 s; the table is rebuilt only when the results changed."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

from rich.text import Text
from textual.containers import Vertical
from textual.widgets import DataTable, Static

from eagle_console.figures import format_value
from eagle_console.result_names import baseline_key, measured_by, short_label
from eagle_console.tui.cells import ellipsise
from eagle_console.tui.messages import PlanReloaded, TabShown
from eagle_console.tui.panes._logview import Poller
from eagle_console.tui.panes.results_plot import RunsPlot
from eagle_console.tui.theme import tstyle

if TYPE_CHECKING:
    from eagle_console.journal.records import Result
    from eagle_console.tui.context import ConsoleContext

REFRESH_S = 2.0
HIGHER_IS_WORSE = ("ttft", "itl", "latency", "_ms", "duration")  # a rise in these is bad


def delta(name: str, value: float | str, baseline: dict[str, float]) -> tuple[str, str]:
    """("+12.3%", style) against the baseline of the same name, or ("", "") without one."""
    base = baseline.get(name)
    if base is None or isinstance(value, str) or not base:
        return "", ""
    pct = (float(value) - base) / base * 100
    worse = pct < 0 if not any(k in name for k in HIGHER_IS_WORSE) else pct > 0
    return f"{pct:+.1f}%", ("ec.error" if worse else "ec.ok") if abs(pct) >= 0.05 else ""


NARROW = 60  # cells: below this a long result name is cut so that its value stays on screen
NAME_CELLS = 14


def short_name(name: str, cells: int | None) -> str:
    """`vocab_positions_differ` → `vocab_position…`: the value beside it matters more than the name's end."""
    return name if cells is None else ellipsise(name, cells)


def _add_columns(table: DataTable) -> None:
    for label, key in (("STEP", "step"), ("RESULT", "name"), ("VALUE", "value"), ("BASELINE", "base"),
                       ("Δ", "delta"), ("AT", "at")):
        table.add_column(label, key=key)


def _run_names(results: list[Result]) -> dict[tuple[str, int | None], set[str]]:
    """The names each run (step, run id) recorded: whether a tok_s has a decode_tok_s beside it."""
    out: dict[tuple[str, int | None], set[str]] = {}
    for r in results:
        out.setdefault((r.step_id, r.run_id), set()).add(r.name)
    return out


def compared(r: Result, baseline: dict[str, float], names: set[str]) -> tuple[float | None, str, str]:
    """(the baseline value, delta, style) of result `r`, by the baseline key it is measured against."""
    key = baseline_key(r.name, names)
    if key is None or key not in baseline:
        return None, "", ""
    d, style = delta(key, r.value, baseline)
    return baseline[key], d, style


def rows(results: list[Result], baseline: dict[str, float], name_cells: int | None = None) -> list[tuple]:
    """Table rows; every cell is Text, since DataTable parses a str cell as markup (a step's `::result r=[/]`
    crashed every console opened on its journal). A wide table says what tok_s, decode_tok_s and speedup are."""
    names = _run_names(results)
    out = []
    for r in results:
        value = format_value(r.value)
        base, d, style = compared(r, baseline, names[(r.step_id, r.run_id)])
        name = Text(short_name(r.name, name_cells))
        label = short_label(r.name)
        if label and name_cells is None:
            name.append(f" {label}", style="dim")
        out.append((Text(r.step_id), name, Text(value),
                    Text("" if base is None else format_value(base)), Text(d, style=tstyle(style)),
                    Text(time.strftime("%H:%M:%S", time.localtime(r.at)))))
    return out


def headline(results: list[Result], baseline: dict[str, float]) -> Text:
    """The latest value of each baselined figure, and of accept length: what the operator came to see. The
    baseline's tok_s is a decode speed: decode_tok_s is shown against it when there is one, end-to-end
    tok_s beside it, each labelled (they were one unlabelled `tok_s +13.1%` beside a log saying +16%)."""
    latest = {r.name: r for r in results}
    parts = Text()

    def add(r: Result, base: float | None = None, key: str | None = None) -> None:
        if parts:
            parts.append("  ·  ")
        parts.append(f"{r.name} {format_value(r.value)}", style="bold")
        label = short_label(r.name)
        if label:
            parts.append(f" {label}")
        d, style = delta(key, r.value, baseline) if key is not None else ("", "")
        if base is not None and d:
            parts.append(f" vs {format_value(base)} baseline ")
            parts.append(d, style=tstyle(style))
        parts.append(f" ({r.step_id})", style="dim")

    shown: set[str] = set()
    for key in baseline:
        name = measured_by(key, latest)
        r = latest.get(name)
        if r is None:
            continue
        add(r, baseline[key], key)
        shown.add(name)
        if name != key and key in latest:  # end-to-end tok_s, labelled, beside the decode figure
            add(latest[key])
            shown.add(key)
    if "accept_length" in latest and "accept_length" not in shown:
        add(latest["accept_length"])
    return parts


class ResultsPane(Vertical):
    """`ResultsPane(ctx)`: `results` is the last list read from the journal."""

    BORDER_TITLE = "Results"
    DEFAULT_CSS = """
    ResultsPane { height: 1fr; }
    ResultsPane > #results-empty { color: $text-muted; padding: 0 1; }
    """

    def __init__(self, ctx: ConsoleContext, *, refresh_s: float = REFRESH_S, **kwargs) -> None:
        super().__init__(**kwargs)
        self.ctx = ctx
        self.results: list[Result] = []
        self._key: Any = None
        self.poller = Poller(self, refresh_s, self._read, self._show, self._failed, name="results-poll",
                             sleep_hidden=True)

    def compose(self):
        yield Static("", id="results-headline", markup=False)
        yield RunsPlot()  # each benchmark run against the baseline
        yield Static("no results recorded yet", id="results-empty", markup=False)
        table: DataTable = DataTable(id="results-table", zebra_stripes=True, cursor_type="row")
        _add_columns(table)
        yield table

    def on_mount(self) -> None:
        self.poller.start()

    def on_unmount(self) -> None:
        self.poller.stop()

    def on_tab_shown(self, message: TabShown) -> None:
        self.poller.poke()

    def on_plan_reloaded(self, message: PlanReloaded) -> None:
        self._key = None  # the baseline may have changed
        self.poller.poke()

    def on_resize(self) -> None:
        if self.results:  # narrow or wide: the names may need cutting, or no longer
            self._show(self.results)
        self.query_one(RunsPlot).show(self.results, dict(self.ctx.plan.baseline), self.size.height)

    def _read(self) -> list[Result]:
        return self.ctx.journal.results()

    def _show(self, results: list[Result]) -> None:
        baseline = dict(self.ctx.plan.baseline)
        name_cells = NAME_CELLS if 0 < self.size.width < NARROW else None
        key = (tuple((r.step_id, r.name, r.value, r.at) for r in results), tuple(sorted(baseline.items())),
               name_cells)
        if key == self._key:
            return
        self._key, self.results = key, results
        table = self.query_one(DataTable)
        # columns too: a column keeps the width of the rows it had ("101.25" was cut to "101.2" when the
        # first poll saw only a 5-character value)
        table.clear(columns=True)
        _add_columns(table)
        for row in rows(list(reversed(results)), baseline, name_cells):  # newest first: the last run's figures on top
            table.add_row(*row)
        self.query_one("#results-headline", Static).update(headline(results, baseline))
        self.query_one(RunsPlot).show(results, baseline, self.size.height)
        empty = self.query_one("#results-empty", Static)
        empty.display = not results
        if baseline:
            empty.update("no results recorded yet · baseline " + ", ".join(f"{k} {format_value(v)}" for k, v in baseline.items()))

    def _failed(self, exc: BaseException) -> None:
        self.query_one("#results-empty", Static).update(Text(f"cannot read results: {exc}", style=tstyle("ec.error")))
