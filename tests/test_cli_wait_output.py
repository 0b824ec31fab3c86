"""`run --wait` / `next --wait` print the step's output as it is written (issue #17), not silence until the
end; `--quiet` keeps the old silence; the exit status stays the step's."""

from __future__ import annotations

import os
import subprocess
import sys
import threading

import clikit
from enginekit import write_plan

PLAN = """
    [[phase]]
    id = "0"
    title = "P"

    [[phase.step]]
    id = "0.1"
    title = "slow"
    run = "echo first line; while [ ! -e go ]; do sleep 0.05; done; echo 'second \\u001b[2J line'; exit 3"
"""


def test_run_wait_streams_the_output_while_the_step_runs(tmp_path, request):
    plan = write_plan(tmp_path, PLAN)
    env = {**os.environ, "EAGLE_CONSOLE_STATE": str(tmp_path / "state")}
    cli = subprocess.Popen([sys.executable, "-m", "eagle_console", "run", str(plan), "0.1", "--wait"],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    # a CLI that prints nothing until the end would wait forever for `go`: let the step go after 30 s so
    # such a CLI ends and the test fails instead of hanging
    guard = threading.Timer(30, (tmp_path / "go").touch)
    guard.start()
    request.addfinalizer(guard.cancel)
    while True:  # the step waits for `go`: its first line must reach us while it still runs
        line = cli.stdout.readline()
        assert line, "the CLI ended before printing the step's first line"
        if "first line" in line:
            break
    assert cli.poll() is None
    (tmp_path / "go").touch()
    out, err = cli.communicate(timeout=60)
    assert cli.returncode == 1, err  # the step failed (exit 3): the CLI says so
    assert "second \\x1b[2J line" in out and "\x1b" not in out  # escaped, never driving the terminal
    assert "failed" in out


def test_run_wait_quiet_prints_no_output(tmp_path):
    plan = write_plan(tmp_path, PLAN)
    (tmp_path / "go").touch()
    env = {**os.environ, "EAGLE_CONSOLE_STATE": str(tmp_path / "state")}
    out = clikit.run(["run", plan, "0.1", "--wait", "--quiet"], env=env, timeout=60)
    assert out.returncode == 1 and "first line" not in out.stdout
