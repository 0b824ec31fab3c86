"""The panes' pollers never ask Textual's `is_on_screen` from their own threads (tui/panes/_logview.py).

With the screen's map stale, `is_on_screen` arranges the screen, and Textual's layout caches (an LRUCache
per widget) are not thread-safe: in a `.ci/run` here a console crashed with a KeyError inside that cache,
its event loop arranging the same widgets at the moment a poller's thread did. The real console runs with
its tabs switched so that pollers sleep hidden and wake; every `is_on_screen` is recorded with its thread."""

from __future__ import annotations

import asyncio
import threading

from test_tui_idle import one_step_console
from tuikit import until


def test_no_poller_thread_asks_textual_whether_its_pane_is_on_screen(tmp_path, monkeypatch):
    from textual.widget import Widget

    from eagle_console.tui.panes._logview import LOOK_S
    from eagle_console.tui.panes.nccl import NcclPane

    askers: set[str] = set()
    real = Widget.is_on_screen.fget

    def is_on_screen(self) -> bool:
        askers.add(threading.current_thread().name)
        return real(self)

    monkeypatch.setattr(Widget, "is_on_screen", property(is_on_screen))
    app = one_step_console(tmp_path, monkeypatch)

    async def main() -> None:
        async with app.run_test(size=(120, 40)) as pilot:
            nccl = await until(pilot, lambda: next(iter(app.query(NcclPane)), None), what="NCCL pane built")
            await until(pilot, lambda: nccl.poller._thread is not None, what="its poller's thread started")
            for key in ("2", "1", "3", "1"):  # tabs shown and hidden: pollers wake, sleep, look again
                await pilot.press(key)
                await pilot.pause(LOOK_S * 0.75)
            assert askers, "nothing asked whether a pane is on screen: the test saw nothing"
        app.ctx.journal.close()

    asyncio.run(main())
    main_thread = threading.main_thread().name
    assert askers == {main_thread}, askers
