"""The incremental fold of `Journal.runs()` (issue #18) gives what a full fold of the file gives, after every
write of a random history, including writes made by another connection (another console, a supervisor)."""

from __future__ import annotations

import random
from dataclasses import asdict

from eagle_console.journal import Journal
from eagle_console.journal.kinds import EventKind

STEPS = ["0.1", "0.2", "0.3"]


def folded(journal: Journal, step: str | None = None) -> list[dict]:
    return [asdict(r) for r in journal.runs(step)]


def test_incremental_runs_equal_a_fresh_fold_after_every_write(tmp_path):
    path = tmp_path / "journal.db"
    console, writer = Journal(path), Journal(path)  # the console keeps its fold; the writer is another process's
    rng = random.Random(18)
    open_runs: list[tuple[int, str]] = []
    try:
        for i in range(300):
            step = rng.choice(STEPS)
            op = rng.randrange(6)
            who = rng.choice([console, writer])
            if op == 0 or not open_runs:
                run = who.begin_run(step, command=f"cmd {i}", log=None, force=True, service=rng.random() < 0.3)
                open_runs.append((run, step))
            elif op == 1:
                run, s = rng.choice(open_runs)
                who.record_proc(run, s, pid=1000 + i, sid=1000 + i, pgid=1000 + i, supervisor_pid=2000 + i)
            elif op == 2:
                run, s = open_runs.pop(rng.randrange(len(open_runs)))
                who.end_run(run, s, exit_code=rng.choice([0, 1, -15]), outcome=rng.choice(["completed", "failed"]))
            elif op == 3:
                run, s = rng.choice(open_runs)
                who.record_ready(run, s)
            elif op == 4:
                who.mark(step, rng.choice(["completed", "pending", "skipped"]))
            else:
                who.append(EventKind.KILL, step, None, None, killed=[i])
            fresh = Journal(path, readonly=True)
            try:
                assert folded(console) == folded(fresh)
                assert folded(console, step) == folded(fresh, step)
                assert (console.latest_run(step) is None) == (fresh.latest_run(step) is None)
                assert [r.id for r in console.open_runs()] == [r.id for r in fresh.runs() if not r.finished]
            finally:
                fresh.close()
    finally:
        console.close()
        writer.close()

