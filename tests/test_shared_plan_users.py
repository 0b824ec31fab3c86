"""A plan on a node two users share (tried by hand: root and a second login on one plan folder).

Before: the second user's `status`, `next`, `log`, `orphans PLAN` and the console all ended in "internal
error: PermissionError" (the plan's state dir is private to its owner by design); and after root ran a step
of an operator's plan (`sudo eagle-console run …`), the files it made in their state dir were root's 0600:
the operator's `log` said "internal error: FileNotFoundError: no such file" of a log that was there, their
console's Output pane stayed blank, and the undo said "no backup recorded for this step: nothing to
restore" of a backup that was there. Now the second user is told whose the state is and what to do, root's
files in an operator's state dir are the operator's, and a log or undo record that cannot be read says so.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
from test_hidepid import readable_site
from test_kill_other_user import AS_OTHER, OTHER_USER

PLAN = """
[plan]
id = "shared"
title = "A shared node"

[[phase]]
id = "0"
title = "P"
  [[phase.step]]
  id = "0.1"
  title = "Fix the drafter's config"
  uses = "json.set"
  with = {{ path = "{cfg}", set = {{ max_position_embeddings = 262144 }} }}
  confirm = false
"""


# Their commands start supervisors with their own interpreter: it must run as them twice over. This venv's
# interpreter may not (a venv of a pyenv Python under a folder only root may enter: the first exec is let
# through here, the supervisor's is refused), so the system's is tried after it — with the copy of psutil
# readable_site made for this venv's Python, which the system's may not load (a cp310 build on 3.11).
NESTED = ("import psutil, subprocess, sys; "
          "sys.exit(subprocess.run([sys.executable, '-c', 'import eagle_console, psutil']).returncode)")


@pytest.fixture
def shared(request):
    """(a folder every user can enter, the environment the second user's commands run with, the argv that
    runs a Python as them)."""
    if os.geteuid() != 0 or not shutil.which("setpriv"):
        pytest.skip("a second user: needs root and setpriv")
    top = Path(tempfile.mkdtemp(prefix="eagle-shared-"))
    request.addfinalizer(lambda: shutil.rmtree(top, ignore_errors=True))
    env = {**os.environ, "PYTHONPATH": readable_site(top), "HOME": "/tmp"}
    env.pop("EAGLE_CONSOLE_STATE", None)
    why = ""
    for py in (sys.executable, "/usr/bin/python3", "/usr/local/bin/python3"):
        if not os.path.exists(py):
            continue
        probe = subprocess.run([*AS_OTHER, py, "-c", NESTED], env=env, capture_output=True, text=True,
                               cwd="/tmp")
        if probe.returncode == 0:
            return top, env, [*AS_OTHER, py]
        why = probe.stderr.strip()[-200:]
    pytest.skip(f"cannot run Python (and a supervisor from it) as uid {OTHER_USER}: {why}")


def console(*args: object, env: dict[str, str] | None = None,
            run_as: list[str] | None = None) -> subprocess.CompletedProcess:
    """`eagle-console ARGS` as root, or with `run_as` (the fixture's argv) as the second user."""
    argv = [*(run_as or [sys.executable]), "-m", "eagle_console", *map(str, args)]
    return subprocess.run(argv, capture_output=True, text=True, timeout=120, env=env, cwd="/tmp")


def write_plan(folder: Path, uid: int) -> tuple[Path, Path]:
    """A plan and the config its step edits, in `folder`, both `uid`'s (as an operator's own files)."""
    folder.mkdir(mode=0o755)
    cfg = folder / "config.json"
    cfg.write_text('{"model_type": "llama"}\n')
    plan = folder / "plan.toml"
    plan.write_text(PLAN.format(cfg=cfg))
    for p in (folder, cfg, plan):
        os.chown(p, uid, uid)
    return plan, cfg


def test_a_second_user_is_told_whose_the_plans_state_is(shared):
    top, env, them = shared
    plan, _cfg = write_plan(top / "plans", 0)
    assert console("run", plan, "0.1", "--yes", "--wait").returncode == 0  # root's history of the plan
    for args in (["status", plan], ["next", plan], ["log", plan, "0.1"], ["orphans", plan]):
        out = console(*args, env=env, run_as=them)
        assert out.returncode == 1, (args, out.stdout, out.stderr)
        assert "internal error" not in out.stderr, (args, out.stderr)
        assert f"{plan.parent / '.eagle-console'} is root's, closed to other users" in out.stderr, out.stderr
        assert "--state-dir DIR or EAGLE_CONSOLE_STATE=DIR" in out.stderr
    own = top / "theirs"
    own.mkdir(mode=0o777)
    out = console("status", plan, "--state-dir", own / "state", env=env, run_as=them)
    assert out.returncode == 0 and "0.1 Fix the drafter's config  [pending]" in out.stdout, out.stderr



def test_a_second_user_is_told_where_no_state_can_be_made_for_them(shared):
    """A colleague's plan that has never run: its folder is theirs, so no state dir can be made beside it."""
    top, env, them = shared
    plan, _cfg = write_plan(top / "plans", 0)
    out = console("next", plan, "--yes", env=env, run_as=them)
    assert out.returncode == 1 and "internal error" not in out.stderr, (out.stdout, out.stderr)
    assert f"({plan.parent} is root's, not writable by this user;" in out.stderr, out.stderr
    assert not (plan.parent / ".eagle-console").exists()

def test_root_running_an_operators_step_leaves_its_state_to_the_operator(shared):
    top, env, them = shared
    plan, cfg = write_plan(top / "plans", OTHER_USER)
    original = cfg.read_bytes()
    out = console("run", plan, "0.1", "--yes", "--wait")  # sudo eagle-console run … on their plan
    assert out.returncode == 0, (out.stdout, out.stderr)
    state = plan.parent / ".eagle-console"
    roots = [str(p) for p in [state, *state.rglob("*")] if p.lstat().st_uid != OTHER_USER]
    assert roots == [], roots
    assert cfg.stat().st_uid == OTHER_USER
    assert json.loads(cfg.read_text())["max_position_embeddings"] == 262144
    log = console("log", plan, "0.1", env=env, run_as=them)
    assert log.returncode == 0 and "max_position_embeddings" in log.stdout, log.stderr
    undo = console("rollback", plan, "0.1", "--yes", env=env, run_as=them)
    assert undo.returncode == 0, (undo.stdout, undo.stderr)
    assert cfg.read_bytes() == original


def test_a_log_closed_to_the_reader_is_said_as_such(shared):
    """The Output pane's follower and `log`: another user's log is named as theirs, not as missing."""
    top, env, them = shared
    plan, _cfg = write_plan(top / "plans", OTHER_USER)
    assert console("run", plan, "0.1", "--yes", "--wait").returncode == 0
    (log,) = (plan.parent / ".eagle-console" / "shared" / "logs").glob("0.1-*.log")
    os.chown(log, 0, 0)  # as an older eagle-console left it, or a step's own log in root's folder
    out = console("log", plan, "0.1", env=env, run_as=them)
    assert out.returncode == 1, out
    assert f"{log} cannot be read: permission denied (it is root's)" in out.stderr, out
    pane = subprocess.run([*them, "-c", "import sys\nfrom eagle_console.node.tail import "
                           "LogFollower\nprint(LogFollower(sys.argv[1]).read_new())", str(log)],
                          capture_output=True, text=True, env=env, cwd="/tmp", timeout=60)
    assert f"[eagle-console] {log} cannot be read: permission denied (it is root's)" in pane.stdout, pane


def test_an_undo_record_that_cannot_be_read_is_not_taken_for_none(tmp_path):
    """No second user needed: a record that is not a regular file stands for one that cannot be read."""
    plan, cfg = write_plan(tmp_path / "plans", os.getuid())
    assert console("run", plan, "0.1", "--yes", "--wait").returncode == 0
    (record,) = [p for p in (plan.parent / ".eagle-console" / "shared" / "artifacts" / "0.1").iterdir()
                 if not p.name.startswith("backup-")]
    record.unlink()
    os.mkfifo(record)
    undo = console("rollback", plan, "0.1", "--yes")
    assert undo.returncode == 1, (undo.stdout, undo.stderr)
    text = undo.stdout + undo.stderr
    assert "no backup recorded" not in text and "is a FIFO (named pipe), not a regular file" in text, text


def test_a_rollback_that_cannot_stop_another_users_run_fails_at_once(shared):
    """Root ran a step of the operator's plan; the operator's rollback cannot signal root's processes. Before:
    "stopped the run's session", "rolled back: 0.1", exit 0, while the run went on as root."""
    top, env, them = shared
    folder = top / "plans"
    folder.mkdir(mode=0o755)
    plan = folder / "plan.toml"
    plan.write_text(PLAN.split("  [[phase.step]]")[0] + '  [[phase.step]]\n  id = "0.1"\n'
                    '  title = "A long job"\n  run = "sleep 600"\n  rollback = "echo undone"\n')
    for p in (folder, plan):
        os.chown(p, OTHER_USER, OTHER_USER)
    out = console("run", plan, "0.1", "--yes")  # root's run, not waited for
    assert out.returncode == 0, out.stderr
    state = folder / ".eagle-console"
    for p in [state, *state.rglob("*")]:  # as this version leaves them (above); an older one did not
        os.chown(p, OTHER_USER, OTHER_USER, follow_symlinks=False)
    status = json.loads(console("status", plan, "--json").stdout)
    (step,) = [s for ph in status["phases"] for s in ph["steps"] if s["id"] == "0.1"]
    pid = step["run"]["pid"]
    try:
        undo = console("rollback", plan, "0.1", "--yes", env=env, run_as=them)
        assert undo.returncode == 1, (undo.stdout, undo.stderr)
        assert f"could not stop the run's session {pid}: pids {pid} still run: root's, not nobody's to " \
               "signal (roll it back as root)" in undo.stdout + undo.stderr, undo
        os.kill(pid, 0)  # still running: nothing claimed otherwise
        after = json.loads(console("status", plan, "--json").stdout)
        assert [s["status"] for ph in after["phases"] for s in ph["steps"]] == ["in_progress"]
        again = console("rollback", plan, "0.1", "--yes")  # root's own rollback stops it
        assert again.returncode == 0 and "rolled back: 0.1" in again.stdout, again
    finally:
        try:
            os.kill(pid, 9)
        except ProcessLookupError:
            pass
