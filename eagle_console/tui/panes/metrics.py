"""The Metrics tab: the followed SGLang service's `/metrics` over time (ops/metrics.py reads it in the poller's
thread): the alarms first, one line of figures, then charts of decode tok/s against the plan's baseline, accept
length under its ceiling (the verify width), running/queued requests and KV cache usage.

Where the pane has no room for charts (an 80x24 terminal gives the tabs a handful of rows) each series is one
sparkline row instead; `z` zooms the tabs to the whole screen, where the charts come back. Charts are redrawn
only when a value changed, or every REDRAW_IDLE_S to move the time axis along: an idle server costs a scrape
a second, not four plots.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any, NamedTuple

from rich.text import Text
from textual.containers import Grid, Vertical

from eagle_console.sparkline import sparkline
from eagle_console.tui.labels import findings_text
from eagle_console.tui.messages import PlanReloaded, StepSelected
from eagle_console.tui.panes._logview import WATCH_S, Poller, QuietStatic
from eagle_console.tui.theme import tstyle

if TYPE_CHECKING:
    from eagle_console.tui.context import ConsoleContext

REFRESH_S = 1.0  # the console's refresh (the GPU pane's); hidden, every WATCH_S: the alarms keep watch
CHART_S = 300.0  # the charts' span
REDRAW_IDLE_S = 10.0
IDLE_S = 2.0  # while the server idles and /metrics reads the same
SMALL_ROWS = 12  # rows: below this the head is one line and the series are sparkline rows
CHART_MIN_ROWS = 7  # a plotext chart below this is axes and little else
SPARK_CELLS = 40
WIDE = 60  # cells: two charts side by side from here (the tabs of a 120-column console are ~66)


class MetricsView(NamedTuple):
    """What one poll hands to the screen: the report and the charts' series (seconds ago → value)."""

    doc: dict[str, Any]
    xs: list[float]
    series: dict[str, list[float | None]]


def read_view(watch: Any) -> MetricsView:
    """Poll once and cut the readings to the charts' span (runs in the poller's thread)."""
    doc = watch.poll()
    now = time.monotonic()
    xs: list[float] = []
    keys = ("tok_s", "accept", "running", "queued", "kv")
    series: dict[str, list[float | None]] = {k: [] for k in keys}
    for r in watch.readings:
        if r.figures is None or now - r.t > CHART_S:
            continue
        f = r.figures
        xs.append(round(r.t - now, 1))
        for key, value in zip(keys, (f.gen_throughput, f.accept_length, f.running_reqs, f.queue_reqs,
                                     f.token_usage), strict=True):
            series[key].append(value)
    return MetricsView(doc, xs, series)


def latencies(doc: dict[str, Any]) -> str:
    from eagle_console.ops.metrics import _ms

    parts = [f"{word} p50 {_ms(q['p50'])}" for key, word in (("ttft_s", "TTFT"), ("itl_s", "ITL"))
             if (q := doc.get(key) or {}).get("p50") is not None]
    return " · ".join(parts) or "no requests yet"


def rows_of(text: Text, width: int) -> int:
    """Rows `text` takes wrapped at `width` cells (words are not kept whole: a row or two too few at most)."""
    from rich.cells import cell_len

    width = max(1, width)
    return sum(max(1, -(-cell_len(line) // width)) for line in text.plain.split("\n"))


def _last(values: list[float | None]) -> float | None:
    return next((v for v in reversed(values) if v is not None), None)


def spark_rows(view: MetricsView, cells: int) -> Text:
    """One row per series where there is no room for charts: `tok/s  ▃▅▇▇ 93.5 (baseline 82)`."""
    doc, s = view.doc, view.series
    rows = []
    base, ceiling = doc.get("baseline_tok_s"), doc.get("num_draft_tokens")
    for key, name, fmt, note in (
        ("tok_s", "tok/s ", "{:.1f}", f" (baseline {base:g})" if base else ""),
        ("accept", "accept", "{:.2f}", f" (of {ceiling})" if ceiling else ""),
        ("running", "run   ", "{:.0f}", f" · queued {_last(s.get('queued', [])) or 0:.0f}"),
        ("kv", "KV    ", "{:.2f}", ""),
    ):
        last = _last(s.get(key, []))
        if last is None:
            continue
        rows.append(f"{name} {sparkline(s[key], cells)} {fmt.format(last)}{note}")
    return Text("\n".join(rows), style=tstyle("ec.other")) if rows else Text()


class MetricsPane(Vertical):
    """`MetricsPane(ctx)`; `view` is the last poll's MetricsView."""

    BORDER_TITLE = "Metrics"
    DEFAULT_CSS = """
    MetricsPane { height: 1fr; }
    MetricsPane > #metrics-head { height: auto; padding: 0 1; }
    MetricsPane > #metrics-spark { height: auto; padding: 0 1; }
    MetricsPane > Grid { grid-size: 2 2; grid-gutter: 0 1; height: 1fr; }
    MetricsPane > Grid.one-row { grid-size: 2 1; }
    MetricsPane > Grid.one-column { grid-size: 1 4; }
    """

    def __init__(self, ctx: ConsoleContext, *, refresh_s: float = REFRESH_S, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        from eagle_console.ops.metrics import MetricsWatch

        self.ctx = ctx
        self.refresh_s = refresh_s
        self.watch = MetricsWatch(ctx.plan, ctx.journal, ctx.selected_step_id)
        self.view: MetricsView | None = None
        self.raised: set[str] = set()  # alarms already told in a toast
        self._drawn: tuple[Any, float] = (None, 0.0)
        self._head_rows = 1
        self.poller = Poller(self, refresh_s, lambda: read_view(self.watch), self._show, self._failed,
                             name="metrics-poll", hidden_interval=WATCH_S)

    def compose(self):
        from eagle_console.tui.panes.charts import Chart

        self.head = QuietStatic(Text("reading /metrics …", style="dim"), id="metrics-head")
        self.spark = QuietStatic("", id="metrics-spark")
        self.charts = {"tok_s": Chart("tok/s"), "accept": Chart("accept len"),
                       "running": Chart("running, queued"), "kv": Chart("KV usage")}
        yield self.head
        yield self.spark
        with Grid():
            yield from self.charts.values()

    def on_mount(self) -> None:
        self.poller.start()

    def on_unmount(self) -> None:
        self.poller.stop()
        self.watch.close()

    def on_step_selected(self, message: StepSelected) -> None:
        if message.step_id != self.watch.step_id:
            self.watch.step_id = message.step_id  # read by the poller's thread at its next poll
            self.poller.poke()

    def on_plan_reloaded(self, message: PlanReloaded) -> None:
        self.watch.plan = self.ctx.plan
        self.watch.journal = self.ctx.journal
        self.poller.poke()

    def on_resize(self) -> None:
        if self.view is not None:
            self._draw(self.view, force=True)

    # -- drawing ---------------------------------------------------------------------------------------

    def _show(self, view: MetricsView) -> None:
        self.view = view
        # an idle server repeats itself: read it every IDLE_S until it says something new
        idle = self.watch.unchanged and view.doc.get("running_reqs") == 0
        self.poller.interval = IDLE_S if idle else self.refresh_s
        doc = view.doc
        from eagle_console.ops.metrics import describe

        head = Text()
        findings = doc.get("findings") or []
        if findings:
            head += findings_text(findings, 480, severity=True)[1:]  # the leading newline
            head += "\n"
        where = f"{doc.get('service') or '—'} · {doc.get('url') or 'no URL'}"
        ranks = ", ".join(doc.get("ranks") or []) or "no scheduler gauges"
        if doc.get("error"):
            head += Text(f"{where}\n{doc['error']}", style=tstyle("ec.warn"))
        elif self.size.height < SMALL_ROWS:  # the sparkline rows carry the figures: one line for the rest
            head += Text(f"{doc.get('service') or '—'} · {ranks} · {latencies(doc)}", style="dim")
        else:
            head += Text(describe(doc), style="bold")
            head += Text(f"\n{where} · {ranks}", style="dim")
        self.head.update(head)
        self._head_rows = rows_of(head, self.size.width - 2)  # the layout to come, not the last one
        self._toast(findings)
        self._draw(view)

    def _toast(self, findings: list[dict[str, Any]]) -> None:
        """An alarm raised while the operator looks at another tab: said once, until it clears."""
        codes = {f["code"] for f in findings if f["severity"] in ("error", "warning")}
        for f in findings:
            if f["code"] in codes - self.raised:
                self.notify(f"{f['code']}: {f['message']}", title="Metrics",
                            severity="error" if f["severity"] == "error" else "warning", timeout=20)
        self.raised = codes

    def _charted(self) -> list[str]:
        """Which series get a chart at this size (the rest are sparkline rows)."""
        grid = self.query_one(Grid)
        rows = self.size.height - self._head_rows
        wide = self.size.width >= WIDE
        if wide and rows >= 2 * CHART_MIN_ROWS + 4:
            grid.set_classes("")
            return ["tok_s", "accept", "running", "kv"]
        if wide and rows >= CHART_MIN_ROWS + 4:
            grid.set_classes("one-row")
            return ["tok_s", "accept"]
        if not wide and rows >= 4 * CHART_MIN_ROWS + 4:
            grid.set_classes("one-column")
            return ["tok_s", "accept", "running", "kv"]
        return []

    def _draw(self, view: MetricsView, force: bool = False) -> None:
        from eagle_console.tui.panes.charts import Line, Series

        charted = self._charted()
        rest = MetricsView(view.doc, view.xs, {k: v for k, v in view.series.items()
                                                if k not in charted and not (k == "queued" and "running" in charted)})
        self.spark.update(spark_rows(rest, max(8, min(SPARK_CELLS, self.size.width - 30))))
        self.spark.display = bool(rest.series.get("tok_s") or rest.series.get("kv")) and len(charted) < 4
        for key, chart in self.charts.items():
            chart.display = key in charted
        self.query_one(Grid).display = bool(charted)
        if not charted:
            return
        values = (tuple(charted), tuple(tuple(v) for v in view.series.values()), view.doc.get("baseline_tok_s"),
                  view.doc.get("num_draft_tokens"))
        key, at = self._drawn
        now = time.monotonic()
        if not force and key == values and now - at < REDRAW_IDLE_S:
            return
        self._drawn = (values, now)
        s, xs, doc = view.series, view.xs, view.doc
        base, ceiling = doc.get("baseline_tok_s"), doc.get("num_draft_tokens")
        tops = [v for v in s["tok_s"] if v is not None] + ([base] if base else [])
        if "tok_s" in charted:
            self.charts["tok_s"].title = "tok/s" + (f" · red {base:g} base" if base else "")
            self.charts["tok_s"].show(xs, [Series("", s["tok_s"])], [Line(base, "baseline")] if base else [],
                                      (0.0, max(tops) * 1.15) if tops else None)
        if "accept" in charted:
            self.charts["accept"].title = "accept len" + (f" · red {ceiling} max" if ceiling else "")
            self.charts["accept"].show(xs, [Series("", s["accept"], "green")],
                                       [Line(float(ceiling), "ceiling")] if ceiling else [],
                                       (0.0, (ceiling or 4) + 0.5))
        if "running" in charted:
            self.charts["running"].show(xs, [Series("running", s["running"]), Series("queued", s["queued"], "orange")])
        if "kv" in charted:
            self.charts["kv"].title = "KV usage · red 0.95"
            self.charts["kv"].show(xs, [Series("", s["kv"], "magenta")], [Line(0.95, "retract")], (0.0, 1.05))

    def _failed(self, exc: BaseException) -> None:
        self.head.update(Text(f"cannot read the metrics: {exc}", style=tstyle("ec.error")))
