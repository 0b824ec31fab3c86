"""Ctrl+C while the console starts (the terminal is not in raw mode yet, so it is SIGINT): asyncio cancelled
the app's main task, Textual cancelled its workers (none yet), and then the first frame's callback started
the journal poller. Nothing cancelled that one: the process waited for its thread at exit for ever (found by
hand: `eagle-console tui` sent SIGINT 0.2-0.85 s after its start hung in 6 of 32 tries, py-spy showing
asyncio's Runner.close waiting on the default executor and the poller's thread, its worker CANCELLED but
not is_cancelled). Now nothing starts once the app has stopped running."""

from __future__ import annotations

import asyncio

from enginekit import write_plan
from tuikit import open_app

from eagle_console.tui import workers

PLAN = '[[phase]]\nid = "0"\ntitle = "P"\n  [[phase.step]]\n  id = "0.1"\n  title = "one"\n  run = "true"\n'


def test_no_worker_starts_once_the_app_has_stopped(tmp_path):
    app, journal = open_app(write_plan(tmp_path, PLAN))
    started = []

    async def main() -> None:
        async with app.run_test() as pilot:
            await pilot.pause()
        # the app has stopped; its loop runs on (as asyncio's Runner.close ran it when the poller started)
        assert not app.is_running
        before = list(app.workers)
        app._in_thread(workers.poll, app.ctx, None, None, group="poll")  # what the first frame's callback does
        await asyncio.sleep(0.5)
        started.extend(w for w in app.workers if w not in before)
        for worker in started:  # never left running past the test
            worker.cancel()

    try:
        asyncio.run(main())
    finally:
        app.ctx.journal.close()
        journal.close()
    assert started == []
