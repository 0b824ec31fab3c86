"""One rule for the CLI (issue 32): bad input exits 2 with one line on stderr, a misspelt option or command
gets a "did you mean" at every level, `validate` reports every problem in one pass, and running a completed
step again says so (CLI and console)."""

from __future__ import annotations

import json
import os
import re
import subprocess
import time
from pathlib import Path

import clikit
import pytest
from enginekit import write_plan

REPO = Path(__file__).resolve().parent.parent

PLAN = """
    [[phase]]
    id = "0"
    title = "P"
      [[phase.step]]
      id = "0.1"
      title = "a"
      run = "true"
      [[phase.step]]
      id = "0.2"
      title = "b"
      run = "true"
"""


def cli(*args: str | Path) -> subprocess.CompletedProcess[str]:
    return clikit.run(args, cwd=REPO, timeout=60, env={**os.environ, "NO_COLOR": "1"})


@pytest.fixture
def plan(tmp_path: Path) -> Path:
    return write_plan(tmp_path, PLAN)


# -- bad input: exit 2, one line -------------------------------------------------------------------------------

BAD_IDS = [
    (("run", "{P}", "0.7"), "unknown step '0.7' in plan t; steps: 0.1, 0.2"),
    (("run", "{P}", "0"), "0 is a phase; run its steps (0.1, 0.2), or use next"),
    (("run", "{P}", "0.7", "--wait"), "unknown step '0.7'"),
    (("mark", "{P}", "9.9", "completed"), "unknown step '9.9' in plan t; steps: 0.1, 0.2"),
    (("rollback", "{P}", "9.9", "--yes"), "unknown step or phase '9.9' in plan t; steps: 0.1, 0.2; phases: 0"),
    (("log", "{P}", "9.9"), "unknown step '9.9' in plan t"),
    (("log", "{P}", "0"), "0 is a phase; give one of its steps (0.1, 0.2)"),
    (("note", "{P}", "9.9", "x"), "unknown step or phase '9.9' in plan t"),
    (("nccl", "--service", "{P}", "9.9"), "--service: unknown step '9.9' in plan t"),
    (("nccl", "--service", "{D}/nope.toml", "0.1"), "eagle-console: {D}/nope.toml: cannot read the plan: No such"),
    (("status", "{D}/nope.toml"), "eagle-console: {D}/nope.toml: cannot read the plan: No such file or directory"),
    (("approve", "{P}", "28"), "no request 28 in plan t's journal"),
]


@pytest.mark.parametrize(("argv", "says"), BAD_IDS, ids=[" ".join(a) for a, _ in BAD_IDS])
def test_an_id_the_plan_does_not_have_is_bad_input(plan: Path, argv: tuple[str, ...], says: str) -> None:
    """Defect: `run PLAN 0.7` and `rollback PLAN 9.9` exited 1 ("the operation ran and failed") while
    `mark PLAN 9.9 completed` exited 2; docs/cli.md says bad input is 2."""
    r = cli(*(a.replace("{P}", str(plan)).replace("{D}", str(plan.parent)) for a in argv))
    assert (r.returncode, r.stdout) == (2, ""), r
    says = says.replace("{D}", str(plan.parent))
    assert r.stderr.count("\n") == 1 and r.stderr.startswith("eagle-console: ") and says in r.stderr, r.stderr
    assert not (plan.parent / ".eagle-console" / "t" / "runs").exists() or not any(
        (plan.parent / ".eagle-console" / "t" / "runs").iterdir())  # nothing was started


# -- bad usage: one line, did you mean -------------------------------------------------------------------------

USAGE = [
    (("status", "{P}", "--jsn"), "eagle-console status: unknown option --jsn, did you mean --json?"),
    (("run", "{P}", "0.1", "--yess"), "eagle-console run: unknown option --yess, did you mean --yes?"),
    (("drafter", "check", "x", "--valus"),
     "eagle-console drafter check: unknown option --valus, did you mean --values?"),
    (("status", "{P}", "--colr", "never"), "did you mean --color?"),
    (("--jsn",), "eagle-console: unknown option --jsn"),
    (("status", "{P}", "extra"), "eagle-console status: unexpected argument 'extra'"),
    (("stauts", "{P}"), "eagle-console: unknown command 'stauts', did you mean 'status'?"),
    (("drafter", "chek", "x"), "did you mean 'check'?"),
    (("mark", "{P}", "0.1", "complete"), "did you mean 'completed'?"),
    (("run", "{P}"), "eagle-console run: the following arguments are required: step"),
    (("drafter",), "eagle-console drafter: give a subcommand: check, compare-vocab"),
]


@pytest.mark.parametrize(("argv", "says"), USAGE, ids=[" ".join(a) for a, _ in USAGE])
def test_bad_usage_is_one_line_with_did_you_mean(plan: Path, argv: tuple[str, ...], says: str) -> None:
    """Defect: `status P --jsn` printed the top-level usage and the error on three lines, naming neither the
    subcommand nor --json; a subcommand's misspelt flag got no suggestion either."""
    r = cli(*(a.replace("{P}", str(plan)) for a in argv))
    assert (r.returncode, r.stdout) == (2, ""), r
    assert r.stderr.count("\n") == 1 and says in r.stderr, r.stderr
    assert "usage:" not in r.stderr


# -- validate: every problem in one pass -------------------------------------------------------------------------

def test_validate_reports_a_bad_builtin_argument_beside_an_unknown_builtin(tmp_path: Path) -> None:
    """Defect: an unknown built-in (0.1) hid the bad `grace` of a known one (0.2): the built-ins' own checks
    ran only on a plan that was otherwise valid, so fixing one error showed the next. A warning (0.3's
    quoted ${x}) was hidden by any error too."""
    path = write_plan(tmp_path, """
        [vars]
        x = "a"

        [[phase]]
        id = "0"
        title = "P"
          [[phase.step]]
          id = "0.1"
          title = "kill"
          uses = "gpu.kil"
          [[phase.step]]
          id = "0.2"
          title = "kill again"
          uses = "gpu.kill"
          with = { scope = "all", grace = "soon" }
          [[phase.step]]
          id = "0.3"
          title = "quoted"
          run = "cat '${x}'"
          priority = "urgent"
    """)
    r = cli("validate", path)
    assert r.returncode == 2
    assert [line.split(":", 1)[1] for line in r.stdout.splitlines()] == [
        '15:10: unknown built-in "gpu.kil"; did you mean "gpu.kill"?',
        "20:10: gpu.kill: `grace`: bad duration 'soon': use a number with a unit (ms, s, m, h, d), "
        'e.g. "90s", "30m", "1h30m"',
        '24:9: warning: "run" puts ${x} inside quotes; the value is shell-quoted already, and inside quotes '
        "that quoting is undone (a value holding a quote would run as commands): write ${x} without quotes",
        "25:14: bad priority 'urgent': use one of high, medium, low",
    ], r.stdout
    assert r.stderr == "1 of 1 plan(s) invalid, 3 error(s)\n"
    doc = json.loads(cli("validate", path, "--json").stdout)
    assert [e["line"] for e in doc["errors"]] == [15, 20, 25] and [w["line"] for w in doc["warnings"]] == [24]


# -- running a completed step again says so --------------------------------------------------------------------

def test_run_of_a_completed_step_says_it_runs_it_again(plan: Path) -> None:
    """Defect: `run PLAN 0.1` of a completed step started it again without a word."""
    first = cli("run", plan, "0.1", "--wait", "--quiet")
    assert first.returncode == 0 and "running it again" not in first.stdout, first
    again = cli("run", plan, "0.1", "--wait", "--quiet")
    assert again.returncode == 0, again
    lines = again.stdout.splitlines()
    assert re.fullmatch(r"0\.1 completed at \d\d:\d\d; running it again", lines[0]), lines
    assert lines[1].startswith("started run 2 of step 0.1"), lines


def test_console_run_of_a_completed_step_says_it_runs_it_again(plan: Path) -> None:
    """The console's `r` goes through the same operation (ops.steps.start_step): its toast says it too."""
    from tuikit import drive, notices, open_app, select, until

    app, journal = open_app(plan)
    journal.mark("0.2", "completed")
    done_at = time.strftime("%H:%M", time.localtime(journal.states()["0.2"].at))
    journal.close()

    async def scenario(pilot) -> None:
        await select(pilot, "0.2")
        await pilot.press("r")
        shown = await until(pilot, lambda: [n for n in notices(app) if "0.2" in n], what="a toast on 0.2")
        assert shown[0].startswith(f"0.2 completed at {done_at}; running it again; started run 1 of step 0.2"), shown
        await until(pilot, lambda: app.ctx.journal.statuses().get("0.2") == "completed"
                    and app.ctx.journal.latest_run("0.2").finished, what="the run's end")

    drive(app, scenario)
