"""`--readonly` writes nothing: the console reconciles a dead supervisor's run in memory (issue #15).

The journal file stays byte-identical (and keeps its mtime) after the console, opened read-only through
App.run_test() on a journal with a dead supervisor, has shown the run as lost — and after `status`.
"""

from __future__ import annotations

import asyncio
import os
import signal

import clikit
import pytest
from enginekit import engine_for, wait_for, write_plan

from eagle_console.cli.common import open_journal


@pytest.fixture(autouse=True)
def _env(monkeypatch):
    monkeypatch.setenv("EAGLE_CONSOLE_KILL_GRACE", "1")
    monkeypatch.setenv("EAGLE_CONSOLE_GPU_BACKEND", "none")


def fingerprint(path) -> tuple[bytes, int]:
    return path.read_bytes(), path.stat().st_mtime_ns


def test_readonly_console_and_status_leave_the_journal_file_untouched(tmp_path):
    from eagle_console.tui.app import make_app

    path = write_plan(tmp_path, """
        [[phase]]
        id = "0"
        title = "P"
          [[phase.step]]
          id = "0.1"
          title = "long"
          run = "sleep 60"
    """)
    eng = engine_for(path)
    run_id = eng.start("0.1")
    run = wait_for(lambda: (r := eng.journal.run(run_id)) and r.pid and r)
    os.kill(run.supervisor_pid, signal.SIGKILL)
    os.killpg(run.pgid, signal.SIGKILL)
    plan = eng.plan
    eng.journal.close()
    db = plan.state_dir / "journal.db"
    before = fingerprint(db)

    journal = open_journal(plan, readonly=True)  # as `eagle-console PLAN --readonly` opens it
    app = make_app(plan, journal, readonly=True)
    seen: list[str] = []

    async def main() -> None:
        async with app.run_test(size=(120, 36)) as pilot:
            for _ in range(100):
                await pilot.pause(0.1)
                state = app.snapshot.states.get("0.1") if app.snapshot else None
                if state and state.status == "failed":
                    seen.append(state.reason or "")
                    break

    asyncio.run(main())
    journal.close()
    assert seen and "lost" in seen[0]  # reconciled, in memory
    assert fingerprint(db) == before

    out = clikit.run(["status", path], timeout=60)
    assert out.returncode == 0 and "[failed]" in out.stdout, out.stdout + out.stderr
    assert fingerprint(db) == before
