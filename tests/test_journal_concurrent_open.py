"""Several processes opening a brand-new journal at the same instant (two operators pressing run on a plan
that never ran): none may fail with "database is locked"."""

from __future__ import annotations

import multiprocessing as mp
from pathlib import Path


def _open_and_mark(path: str, start, results) -> None:
    from eagle_console.journal import Journal

    start.wait()
    try:
        Journal(Path(path)).mark("0.1", "completed")
        results.put("ok")
    except Exception as exc:  # reported to the test, which fails on it
        results.put(repr(exc))


def test_simultaneous_first_open_never_fails(tmp_path):
    ctx = mp.get_context("fork")
    for round_ in range(15):
        path = str(tmp_path / f"j{round_}.db")
        start, results = ctx.Event(), ctx.Queue()
        procs = [ctx.Process(target=_open_and_mark, args=(path, start, results)) for _ in range(4)]
        for p in procs:
            p.start()
        start.set()
        for p in procs:
            p.join(60)
        outcomes = [results.get(timeout=10) for _ in procs]
        assert outcomes == ["ok"] * 4, outcomes
        from eagle_console.journal import Journal

        assert len([e for e in Journal(Path(path)).events() if e.kind == "status"]) == 4
