"""Runs are numbered per step (issue #17): the third run of 0.2 is "run 3 of step 0.2" on every face, whatever
other steps ran in between; the journal's run id stays beside it, for commands that take an id."""

from __future__ import annotations

import os

import clikit
from enginekit import write_plan

from eagle_console.journal import Journal

PLAN = """
    [[phase]]
    id = "0"
    title = "P"

    [[phase.step]]
    id = "0.1"
    title = "one"
    run = "true"

    [[phase.step]]
    id = "0.2"
    title = "two"
    run = "true"
"""


def test_run_numbers_count_per_step(tmp_path):
    journal = Journal(tmp_path / "journal.db")
    ids = [journal.begin_run(s, command="true", log=None, force=True) for s in ("0.1", "0.2", "0.1", "0.1", "0.2")]
    assert [journal.run_number(i) for i in ids] == [1, 1, 2, 3, 2]
    assert journal.run_label(ids[3]) == f"run 3 of step 0.1 (id {ids[3]})"
    journal.close()


def test_the_cli_names_the_steps_own_run_number(tmp_path):
    plan = write_plan(tmp_path, PLAN)
    env = {**os.environ, "EAGLE_CONSOLE_STATE": str(tmp_path / "state")}

    def run(step: str) -> str:
        out = clikit.run(["run", plan, step, "--wait", "--force"], env=env, timeout=60)
        assert out.returncode == 0, out.stderr
        return next(line for line in out.stdout.splitlines() if line.startswith("started"))  # after "… running it again"

    run("0.1")
    run("0.1")
    assert run("0.2").startswith("started run 1 of step 0.2 (id ")
    assert run("0.1").startswith("started run 3 of step 0.1 (id ")
