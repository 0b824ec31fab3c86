"""The Extraction pane: progress of a hidden-state extraction step (`watch.extraction`): a bar, samples and
tokens done, rate, ETA, output size and projected final size against free space (its filesystem and
/dev/shm), with the "does not fit" warning on top. ExtractionWatch.tick runs in a worker once a second."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from rich.text import Text
from textual.containers import Vertical
from textual.widgets import ProgressBar, Static

from eagle_console.figures import format_value
from eagle_console.tui.messages import PlanReloaded, StepSelected, TabShown
from eagle_console.tui.panes._logview import Poller, QuietStatic
from eagle_console.tui.panes.follow import step_log
from eagle_console.tui.theme import tstyle

if TYPE_CHECKING:
    from eagle_console.plan.model import Plan, Step
    from eagle_console.tui.context import ConsoleContext

REFRESH_S = 1.0
NO_WATCH = "no step of this plan watches an extraction (a step's `watch = { extraction = {…} }`)"


def watched_step(plan: Plan, selected: str | None) -> Step | None:
    """The selected step when it watches an extraction, else the last such step of the plan."""
    step = plan.step(selected) if selected else None
    if step is not None and step.watch_extraction is not None:
        return step
    candidates = [s for s in plan.steps() if s.watch_extraction is not None]
    return candidates[-1] if candidates else None


def human_bytes(n: float | None) -> str:
    if n is None:
        return "N/A"
    for unit in ("B", "KB", "MB", "GB", "TB", "PB"):
        if abs(n) < 1000 or unit == "PB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1000
    return f"{n:.1f} PB"


def human_secs(s: float | None) -> str:
    if s is None:
        return "N/A"
    s = int(s)
    return f"{s // 3600}h{s % 3600 // 60:02d}m" if s >= 3600 else f"{s // 60}m{s % 60:02d}s"


def figures_text(r: dict[str, Any]) -> Text:
    """Key figures first, so a short pane (80x24) keeps them: samples, rate, ETA; then whether the output
    fits and its size; the details (files, free space, tokens) last."""
    total = r.get("total")
    done = r["done"]
    rate = r.get("rate_per_s")
    out = Text(f"samples {done}/{total if total is not None else '?'} · "
               f"{'N/A' if rate is None else format(rate, '.2f')}/s · ETA {human_secs(r.get('eta_s'))}", style="bold")
    fits = r.get("fits")
    out += Text("\nfits: " + {True: "yes", False: "NO", None: "unknown yet"}[fits],
                style=tstyle({True: "ec.ok", False: "ec.error.bold", None: "dim"}[fits]))
    out += Text(f" · output {human_bytes(r['output_bytes'])} → {human_bytes(r.get('projected_bytes'))}")
    out += Text(f"\n{r['files']} files · free {human_bytes(r.get('free_bytes'))}"
                f" · /dev/shm free {human_bytes(r.get('shm_free_bytes'))}", style="dim")
    if r.get("tokens") is not None:
        out += Text(f" · tokens {r['tokens']:,}", style="dim")
    if r.get("summary"):
        out += Text(f"\nfinished: {format_value(r['summary'])}", style=tstyle("ec.ok"))
    return out


class ExtractionPane(Vertical):
    """`ExtractionPane(ctx)`: `last` is the latest tick document of the watched step."""

    BORDER_TITLE = "Extraction"
    DEFAULT_CSS = """
    ExtractionPane { height: 1fr; padding: 0 1; }
    ExtractionPane > #ex-warning { display: none; background: $error; color: $text; text-style: bold; }
    ExtractionPane > #ex-warning.-shown { display: block; }
    ExtractionPane > #ex-title { text-style: bold; text-wrap: nowrap; text-overflow: ellipsis; }
    ExtractionPane > #ex-bar { display: none; }
    ExtractionPane > #ex-bar.-shown { display: block; }
    """

    def __init__(self, ctx: ConsoleContext, *, refresh_s: float = REFRESH_S, **kwargs) -> None:
        super().__init__(**kwargs)
        self.ctx = ctx
        self.step_id = ctx.selected_step_id
        self.last: dict[str, Any] | None = None
        self.watching: str | None = None
        self._watch: Any = None
        self._key: tuple | None = None
        self.poller = Poller(self, refresh_s, self._read, self._show, self._failed, name="extraction-poll",
                             sleep_hidden=True)

    def compose(self):
        # the key figures first: the warning's detail and the bar come under them (issue #17: at 80x24 the
        # warning on top pushed rate, ETA and size off the pane)
        yield QuietStatic(NO_WATCH, id="ex-title", markup=False)
        yield QuietStatic("", id="ex-figures", markup=False)
        yield QuietStatic("", id="ex-warning", markup=False)  # paths and log text: never markup
        # Shown with a watched extraction only: an unknown total animates the bar, 15 redraws a second (Textual
        # ProgressBar), which in a plan without extraction, hidden or not, was most of an idle console's
        # wakeups (py-spy: DOMNode.automatic_refresh). total=0 draws nothing and runs no timer.
        yield ProgressBar(total=0, show_eta=False, id="ex-bar")

    def on_mount(self) -> None:
        self.poller.start()

    def on_unmount(self) -> None:
        self.poller.stop()

    def on_step_selected(self, message: StepSelected) -> None:
        self.step_id = message.step_id
        self.poller.poke()

    def on_tab_shown(self, message: TabShown) -> None:
        self.poller.poke()

    def on_plan_reloaded(self, message: PlanReloaded) -> None:
        self._key = None  # paths may have changed
        self.poller.poke()

    def _paths(self, step: Step) -> tuple[list[Path], list[Path]]:
        w = step.watch_extraction
        assert w is not None
        folder = self.ctx.plan.path.parent

        def absolute(p: Path) -> Path:
            return p if p.is_absolute() else folder / p

        logs = [absolute(w.log)] if w.log else []
        if not logs:
            run_log = step_log(self.ctx.journal, step.id)
            logs = [run_log] if run_log else []
        return logs, ([absolute(w.output)] if w.output else [])

    def _read(self) -> tuple[str | None, dict[str, Any] | None]:
        from eagle_console.node.extraction import ExtractionWatch

        step = watched_step(self.ctx.plan, self.step_id)
        if step is None:
            self._watch = None
            return None, None
        logs, outputs = self._paths(step)
        w = step.watch_extraction
        key = (step.id, tuple(logs), tuple(outputs), w.pattern, w.total)
        if key != self._key:  # a new target: start its rate history afresh
            self._key = key
            self._watch = ExtractionWatch(logs=logs, outputs=outputs, pattern=w.pattern, total=w.total)
        return step.id, self._watch.tick()

    def _show(self, result: tuple[str | None, dict[str, Any] | None]) -> None:
        step_id, r = result
        self.watching, self.last = step_id, r
        title = self.query_one("#ex-title", Static)
        warning = self.query_one("#ex-warning", Static)
        bar = self.query_one("#ex-bar", ProgressBar)
        if r is None:
            title.update(NO_WATCH)
            warning.remove_class("-shown")
            bar.remove_class("-shown")
            bar.update(total=0)  # no animation timer left running
            return
        step = self.ctx.plan.step(step_id) if step_id else None
        where = f" · on node {step.node}" if step is not None and step.node else ""
        title.update(f"{step_id} {step.title if step else ''}{where}")
        bar.add_class("-shown")
        bar.update(total=r["total"], progress=r["done"])
        self.query_one("#ex-figures", Static).update(figures_text(r))
        if r.get("warnings"):  # once finished it is a fact about the files, not a forecast
            finished = r.get("summary") is not None or (r.get("total") is not None and r["done"] >= r["total"])
            warning.update(("" if finished else "DOES NOT FIT: ") + " · ".join(r["warnings"]))
            warning.add_class("-shown")
        else:
            warning.remove_class("-shown")

    def _failed(self, exc: BaseException) -> None:
        self.query_one("#ex-figures", Static).update(Text(f"cannot read the extraction: {exc}", style=tstyle("ec.error")))
