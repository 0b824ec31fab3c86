"""Sizes the CSS cannot say: the Plan column's width by the terminal's, the Detail line's most rows on a short
screen, and the GPU pane's cap, which depends on the right-hand column's height (issue 32: at 80x24 a Detail
line grown to five rows left the GPU pane no holder row)."""

from __future__ import annotations

from typing import Any

from eagle_console.tui import zoom
from eagle_console.tui.panes.detail import ROWS, ROWS_SHORT

NARROW_BELOW = 120  # columns
PLAN_WIDTH, PLAN_WIDTH_NARROW = "45%", "55%"
SHORT_BELOW = 30  # rows: below this the Detail line keeps to ROWS_SHORT
GPU_SHARE = 0.7  # of the right-hand column the GPU pane may take (it is as tall as its content up to that)
GPU_ROWS = 14  # 8 GPUs, the holders' header, three holders and the border: what GPU_SHARE gave at 80x24
LOGS_MIN_ROWS = 5  # #logs' min-height in console.tcss


def columns(app: Any, width: int) -> None:
    """The Plan pane takes more of a narrow terminal. Set on the one widget rather than through a
    breakpoint class on the Screen, which restyles every widget (~40 ms before the first frame)."""
    left = zoom.main_screen(app).query("#left")
    if not left:  # the screen torn down under a late Resize (SIGTERM's quit on Textual 6.0, a CI run)
        return
    left.first().styles.width = _plan_share(app, width)


def plan_width(app: Any, width: int) -> int:
    """The Plan pane's width that `columns` gives it at a terminal `width`, before the screen is laid out:
    its labels are cut to it once (cut at another width, they changed at the pane's first Resize, and the
    tree's widest line with them: a second layout before the first frame was complete)."""
    return width * int(_plan_share(app, width).rstrip("%")) // 100


def _plan_share(app: Any, width: int) -> str:
    """The Plan column's CSS width: the whole screen while the plan or its step is zoomed."""
    if zoom.zoomed(app) in ("plan", "step-info"):
        return "100%"
    return PLAN_WIDTH_NARROW if width < NARROW_BELOW else PLAN_WIDTH


def detail_rows(app: Any, height: int) -> None:
    app.detail.fit(ROWS_SHORT if height < SHORT_BELOW else ROWS)


def gpu_cap(app: Any) -> None:
    """GPU_SHARE of the column, but on a short screen up to GPU_ROWS while the log tabs keep their minimum: a
    taller Detail line then takes its rows from the log tabs, not from the holders. Zoomed: the zoom's CSS."""
    if app._shutting_down() or not app.screen_stack:  # a late call while the app closes
        return
    column = zoom.main_screen(app).query_one("#right").size.height
    cap = None if zoom.zoomed(app) is not None or not column else \
        max(int(column * GPU_SHARE), min(column - LOGS_MIN_ROWS, GPU_ROWS))
    now = app.gpus.styles.inline.max_height
    if (now.value if now is not None else None) != cap:  # setting a style, even the same, lays the screen out
        app.gpus.styles.max_height = cap


def settle_gc() -> None:
    """`open_console` runs the startup with the cyclic GC off: collect once, now that the first screen is up,
    keep what survived out of later collections, and collect as usual from here on."""
    import gc

    if not gc.isenabled():
        gc.collect()
        gc.freeze()
        gc.enable()
