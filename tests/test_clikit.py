"""tests/clikit.py gives a test what `subprocess.run([python, "-m", "eagle_console", …])` gives: the same stdout,
stderr and exit status, a process of its own, the environment and working directory asked for and nothing
carried from one command to the next, and a timeout that ends the command."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
from pathlib import Path

import clikit
import psutil
import pytest
from enginekit import engine_for, session_pids, wait_for, write_plan

PLAN = """
    [[phase]]
    id = "0"
    title = "P"
      [[phase.step]]
      id = "0.1"
      title = "who"
      run = "echo foo=$FOO. cwd=$PWD"
      [[phase.step]]
      id = "0.2"
      title = "long"
      run = "sleep 60"
"""


def fresh(argv: list[object], **kw) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "eagle_console", *map(str, argv)], capture_output=True, text=True,
                          stdin=subprocess.DEVNULL, timeout=60, **kw)


@pytest.mark.parametrize("argv", [
    ["status", "{plan}", "--json"],
    ["status", "{plan}"],
    ["validate", "{broken}"],  # exit 2, the error on stdout as PLAN:LINE:COL
    ["status", "{tmp}/nope.toml"],  # exit 2, one line on stderr
    ["stauts", "{plan}"],  # a mistyped command: did you mean
    ["log", "{plan}", "0.1"],  # no run yet: exit 1
    ["--version"],
])
def test_the_same_output_and_status_as_a_fresh_interpreter(tmp_path: Path, argv: list[str]) -> None:
    plan = write_plan(tmp_path, PLAN)
    (tmp_path / "broken.toml").write_text('[plan]\nid = "b"\ntitle = "b"\n[[phase]]\nid = 3\n')
    words = [w.format(plan=plan, broken=tmp_path / "broken.toml", tmp=tmp_path) for w in argv]
    env = {**os.environ, "EAGLE_CONSOLE_STATE": str(tmp_path / "state"), "NO_COLOR": "1"}
    want, got = fresh(words, env=env), clikit.run(words, env=env, timeout=60)
    assert (got.returncode, got.stdout, got.stderr) == (want.returncode, want.stdout, want.stderr)
    assert got.args[-len(words):] == words


def test_a_process_of_its_own_with_the_env_and_cwd_asked_for_and_nothing_carried_over(tmp_path: Path) -> None:
    plan = write_plan(tmp_path, PLAN)
    state: dict[str, str] = {}  # the plan's own state folder, which engine_for reads too
    ran = clikit.run(["run", plan.name, "0.1", "--wait"], cwd=tmp_path, env={**os.environ, **state, "FOO": "bar"})
    assert ran.returncode == 0, ran.stderr
    first = clikit.run(["log", plan, "0.1"], env={**os.environ, **state}).stdout
    assert "foo=bar." in first and f"cwd={tmp_path}" in first  # the plan found from the cwd given
    engine_for(plan).journal.mark("0.1", "pending")
    ran = clikit.run(["run", plan, "0.1", "--wait"], env={**os.environ, **state})  # no FOO: not the last one's
    assert ran.returncode == 0, ran.stderr
    second = clikit.run(["log", plan, "0.1"], env={**os.environ, **state}).stdout
    assert "foo=." in second


def test_past_its_timeout_the_command_is_killed(tmp_path: Path) -> None:
    plan = write_plan(tmp_path, PLAN)
    env = dict(os.environ)
    zygote = psutil.Process(clikit._started()[0].pid)
    seen: list[psutil.Process] = []
    with pytest.raises(subprocess.TimeoutExpired):
        threading.Timer(1.0, lambda: seen.extend(zygote.children())).start()
        clikit.run(["run", plan, "0.2", "--wait"], env=env, timeout=2)
    # the command was the zygote's child, not this process's, and it is gone (killed and waited for)
    assert len(seen) == 1 and seen[0].pid != os.getpid() and not psutil.pid_exists(seen[0].pid)
    assert zygote.children() == [] and zygote.is_running()
    run = wait_for(lambda: next(iter(engine_for(plan).journal.open_runs()), None))
    try:
        assert run is not None and session_pids(run.sid)  # the step itself runs on under its supervisor
    finally:
        out = clikit.run(["rollback", plan, "0.2", "--yes"], env=env)
        assert out.returncode == 0, out.stderr
    assert json.loads(clikit.run(["status", plan, "--json"], env=env).stdout)["schema"] == 1


def test_a_wait_on_a_zygote_that_died_says_so_instead_of_waiting_on_its_successor(tmp_path: Path) -> None:
    plan = write_plan(tmp_path, PLAN)
    command = clikit.start(["run", plan, "0.2", "--wait"])
    zygote = clikit._zygote[0]
    try:
        zygote.kill()
        zygote.wait()
        clikit.run(["--version"])  # a new zygote for what comes next
        with pytest.raises(RuntimeError, match="the CLI zygote .* ended"):
            command.wait(timeout=10)
    finally:
        # the command lives on without its zygote: let it start the run's action before it is killed, or a
        # kill between its journaling the run and its supervisor's start leaves a run that is only starting
        run = wait_for(lambda: next((r for r in engine_for(plan).journal.open_runs() if r.sid), None))
        os.kill(command.pid, signal.SIGKILL)
        assert clikit.run(["rollback", plan, "0.2", "--yes"]).returncode == 0
        assert not session_pids(run.sid)
