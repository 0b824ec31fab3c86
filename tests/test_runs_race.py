"""`eagle-console run` racing `eagle-console rollback` of one step, as two real processes (issue #15).

The journal must end up telling the truth every time: the step `completed` exactly when its effect (a file
the action writes at its end, the rollback removes) exists, `rolled_back` exactly when it does not. One of
the two waits for or refuses the other, decided inside the journal's transaction.
"""

from __future__ import annotations

import clikit
import pytest
from enginekit import engine_for, wait_for, write_plan

from eagle_console.journal import EventKind

TRIES = 20


@pytest.fixture(autouse=True)
def _short_grace(monkeypatch):
    monkeypatch.setenv("EAGLE_CONSOLE_KILL_GRACE", "1")


def cli(*args: str) -> clikit.Command:
    return clikit.start(args, stderr_to_stdout=True)


def settled(eng) -> bool:
    """No run and no rollback goes on (read from the events, as any journal has them)."""
    eng.reconcile()
    events = eng.journal.events()
    begun = {e.id for e in events if e.kind == EventKind.ROLLBACK_BEGIN}
    ended = {e.run_id for e in events if e.kind == EventKind.ROLLBACK_END}
    return not eng.journal.open_runs() and begun <= ended


def test_run_racing_rollback_always_leaves_a_true_journal(tmp_path):
    effect = tmp_path / "effect"
    path = write_plan(tmp_path, f"""
        [[phase]]
        id = "0"
        title = "P"
          [[phase.step]]
          id = "0.1"
          title = "write the effect, slowly"
          run = "sleep 0.4; touch {effect}"
          rollback = "rm -f {effect}"
    """)
    eng = engine_for(path)
    outcomes = []
    for n in range(TRIES):
        if eng.journal.statuses().get("0.1") != "completed":  # both may only race a completed step
            eng.start("0.1", force=True)
            wait_for(lambda: settled(eng), timeout=30)
        assert eng.journal.statuses()["0.1"] == "completed" and effect.exists()
        run = cli("run", str(path), "0.1")
        rollback = cli("rollback", str(path), "0.1", "--yes")
        texts = [p.communicate(timeout=60)[0] for p in (run, rollback)]
        wait_for(lambda: settled(eng), timeout=30)
        status = eng.journal.statuses()["0.1"]
        outcomes.append((status, effect.exists()))
        assert (status, effect.exists()) in (("completed", True), ("rolled_back", False)), (n, status, texts)
