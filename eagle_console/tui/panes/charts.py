"""A chart over time for the Metrics and Results tabs: textual-plotext's PlotextPlot, drawn only when what it
shows changed.

PlotextPlot rebuilds its whole figure in every `render()` (~5-15 ms here for a 60x8 chart); a screen relayout
or a theme change calls it again with nothing new. `Chart` keeps the last rendering and gives it back until
its data, its size or the theme change. plotext is imported with the first chart (the Metrics tab is
mounted after the first frame), never at the console's start.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, NamedTuple

from textual_plotext import PlotextPlot

MIN_SPAN_S = 60.0


class Line(NamedTuple):
    """A horizontal reference line: the baseline, the accept length's ceiling, the retraction threshold."""

    y: float
    label: str
    color: str = "red"


class Series(NamedTuple):
    label: str
    ys: Sequence[float | None]
    color: str = "cyan"
    marker: str = "braille"  # plotext's: a line of braille dots; a character marks single points


class Chart(PlotextPlot):
    """`Chart(title)`; `show(xs, series, lines, ylim)` draws, `xs` in seconds (negative: ago)."""

    DEFAULT_CSS = "Chart { height: 1fr; width: 1fr; min-height: 5; }"

    def __init__(self, title: str, xlabel: str = "s ago", **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.title = title
        self.xlabel = xlabel
        self._data: Any = None
        self._cache: tuple[Any, Any] | None = None
        self.draws = 0  # renders that built a figure with data (tests and the idle benchmark count them)

    def show(self, xs: Sequence[float], series: Sequence[Series], lines: Sequence[Line] = (),
             ylim: tuple[float, float] | None = None, xticks: Sequence[tuple[float, str]] | None = None) -> None:
        data = (tuple(xs), tuple((s.label, tuple(s.ys), s.color, s.marker) for s in series), tuple(lines), ylim,
                tuple(xticks) if xticks else None)
        if data == self._data:
            return
        self._data = data
        self.refresh()

    def render(self) -> Any:
        key = (self._data, self.title, self.size, self.app.theme)
        if self._cache is not None and self._cache[0] == key:
            return self._cache[1]
        self._build()
        self.draws += self._data is not None
        out = super().render()
        self._cache = (key, out)
        return out

    def _build(self) -> None:
        plt = self.plt
        plt.clear_data()
        plt.clear_figure()
        plt.title(self.title)
        if self._data is None:
            return
        xs, series, lines, ylim, xticks = self._data
        for label, ys, color, marker in series:
            pts = [(x, y) for x, y in zip(xs, ys, strict=False) if y is not None]
            if pts:
                draw = plt.plot if marker == "braille" else plt.scatter  # a character: the points alone
                draw([p[0] for p in pts], [p[1] for p in pts], label=label or None, color=color, marker=marker)
        for line in lines:
            plt.hline(line.y, line.color)
        if ylim is not None:
            plt.ylim(*ylim)
        if xticks:
            plt.xticks([x for x, _ in xticks], [t for _, t in xticks])
        elif xs:  # at least a minute, so the first readings do not fill the width
            plt.xlim(min(min(xs), -MIN_SPAN_S), 0.0)
        plt.xlabel(self.xlabel)
