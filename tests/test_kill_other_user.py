"""A second user on the node (issue 26's situations, tried by hand in tmux with a second login): their
orphan holds GPU memory beside ours. Before: `orphans --kill` asked "send SIGTERM to 2 orphan(s) (A B)?"
counting the other user's orphan it then refused, and exited 0 with that orphan's memory still held; a
gpu.kill step said "completed" the same way; and root, told "select it explicitly", had no way to do so
(no face passed a pick). Now the question names only what is signalled, a kill that leaves an orphan in its
scope exits 1 (the step fails) saying which, and root picks another user's process by pid (`--pid`, space
in K); a user who is not root still cannot."""

from __future__ import annotations

import asyncio
import json
import os
import pty
import pwd
import select
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest
from test_hidepid import readable_site, shared_node
from test_orphan_ways import alive
from test_tui_panes_gpus import make_ctx, stop_pids, until

from eagle_console.sim.orphans import leave

OTHER_USER = 65534
AS_OTHER = ["setpriv", "--reuid", str(OTHER_USER), "--regid", str(OTHER_USER), "--clear-groups"]
KILL_STEP_PLAN = """
[plan]
id = "users"
title = "A shared node"

[[phase]]
id = "0"
title = "P"
  [[phase.step]]
  id = "0.1"
  title = "Kill orphaned workers"
  uses = "gpu.kill"
  with = { scope = "orphans", grace = "1s" }
  confirm = false
"""


@pytest.fixture
def node(request, monkeypatch):
    """(sim dir, env of the other user, root's orphan pid, the other user's orphan pid): the node's folder is
    one every user can reach, as a real node's /dev/nvidia* are."""
    if os.geteuid() != 0 or not shutil.which("setpriv"):
        pytest.skip("a second user: needs root and setpriv")
    monkeypatch.delenv("EAGLE_CONSOLE_GPU_BACKEND", raising=False)
    monkeypatch.setenv("EAGLE_CONSOLE_KILL_GRACE", "1")
    top = Path(tempfile.mkdtemp(prefix="eagle-users-"))
    request.addfinalizer(lambda: shutil.rmtree(top, ignore_errors=True))
    env = {**os.environ, "PYTHONPATH": readable_site(top), "HOME": "/tmp", "EAGLE_CONSOLE_GPU_BACKEND": "sim"}
    sim = shared_node(top / "sim")
    # their launcher's shell starts the worker as them and exits: the worker is orphaned (a launcher's own
    # `subprocess` of this venv's interpreter cannot run as them here, so `leave` is not used for theirs)
    out = top / "theirs.out"
    theirs = subprocess.run(["sh", "-c", '"$@" > "$OUT" 2>&1 < /dev/null & echo $!', "sh", *AS_OTHER,
                             sys.executable, "-m", "eagle_console.sim.orphans", "worker", "--sim", str(sim),
                             "--gpu", "6", "--mib", "2500"], capture_output=True, text=True, timeout=60,
                            env={**env, "OUT": str(out)}, cwd="/tmp", start_new_session=True)
    other = int(theirs.stdout)
    request.addfinalizer(lambda: stop_pids([other]))
    deadline = time.monotonic() + 60
    while "holding" not in out.read_text() and time.monotonic() < deadline and alive(other):
        time.sleep(0.05)
    if "holding" not in out.read_text():
        pytest.skip(f"cannot run Python as uid {OTHER_USER}: {out.read_text().strip()[-200:]}")
    (mine,) = leave(sim, "setsid", count=1, mib=1000.0, gpus=[2]).pids
    request.addfinalizer(lambda: stop_pids([mine]))
    return sim, env, mine, other


def orphans(sim: Path, *args: str, env: dict[str, str] | None = None,
            user: list[str] = ()) -> subprocess.CompletedProcess:
    return subprocess.run([*user, sys.executable, "-m", "eagle_console", "orphans", *args, "--sim", str(sim)],
                          capture_output=True, text=True, timeout=120, env=env, cwd="/tmp")


def test_the_question_names_only_the_orphans_it_will_signal(node):
    sim, _env, mine, other = node
    leader, follower = pty.openpty()  # `--kill` without `--yes` asks only at a terminal
    proc = subprocess.Popen([sys.executable, "-m", "eagle_console", "orphans", "--kill", "--sim", str(sim)],
                            stdin=follower, stdout=follower, stderr=follower, start_new_session=True)
    os.close(follower)
    seen, deadline = b"", time.monotonic() + 60
    while b"[y/N]" not in seen and time.monotonic() < deadline and proc.poll() is None:
        if select.select([leader], [], [], 0.5)[0]:
            try:
                seen += os.read(leader, 4096)
            except OSError:
                break
    os.write(leader, b"n\n")
    proc.wait(timeout=60)
    os.close(leader)
    question = next(line for line in seen.decode().splitlines() if "[y/N]" in line)
    assert f"send SIGTERM to 1 orphan(s) ({mine}) (1 more not signalled, said above)?" in question, question
    assert alive(mine) and alive(other)  # "n": nothing signalled


def test_a_kill_that_leaves_another_users_orphan_exits_1_and_says_which(node):
    sim, _env, mine, other = node
    out = orphans(sim, "--kill", "--yes", "--json")
    assert out.returncode == 1, (out.stdout, out.stderr)
    doc = json.loads(out.stdout)
    assert doc["killed"] == [mine] and doc["survivors"] == []
    (listed,) = [h for h in doc["holders"] if h["pid"] == other]
    assert listed["reason"].endswith(f"(root kills it only when picked): --kill --pid {other}"), listed
    assert f"not signalled: {other} (why: above): their GPU memory stays in use" in out.stderr
    assert not alive(mine) and alive(other)


def test_root_kills_another_users_orphan_it_picks_by_pid_and_nothing_else(node):
    sim, _env, mine, other = node
    out = orphans(sim, "--kill", "--yes", "--json", "--pid", str(other))
    assert out.returncode == 0, (out.stdout, out.stderr)
    doc = json.loads(out.stdout)
    assert doc["killed"] == [other] and doc["freed_mib"] == {"6": 2500.0}
    assert not alive(other) and alive(mine)  # the pick is the kill's whole scope
    bad = orphans(sim, "--kill", "--yes", "--pid", "999999999")
    assert bad.returncode == 2 and "not a GPU holder here: 999999999" in bad.stderr


def test_a_user_who_is_not_root_kills_their_own_orphan_and_cannot_pick_roots(node):
    sim, env, mine, other = node
    out = orphans(sim, "--kill", "--yes", env=env, user=AS_OTHER)
    assert out.returncode == 1, (out.stdout, out.stderr)
    assert "not signalled: belongs to root\n" in out.stdout  # no way to pick it offered
    assert f"killed 1 ({other}) · freed 2500 MiB (GPU 6: 2500 MiB)" in out.stdout
    assert f"not signalled: {mine} (why: above)" in out.stdout
    picked = orphans(sim, "--kill", "--yes", "--pid", str(mine), env=env, user=AS_OTHER)
    assert picked.returncode == 1, (picked.stdout, picked.stderr)
    assert f"nothing signalled: {mine} (why: above)" in picked.stdout
    assert alive(mine) and not alive(other)


def test_a_gpu_kill_step_fails_while_another_users_orphan_holds_memory(node, tmp_path):
    sim, _env, mine, other = node
    plan = tmp_path / "plan.toml"
    plan.write_text(KILL_STEP_PLAN)
    out = subprocess.run([sys.executable, "-m", "eagle_console", "run", str(plan), "0.1", "--yes", "--wait"],
                         capture_output=True, text=True, timeout=120,
                         env={**os.environ, "EAGLE_CONSOLE_SIM": str(sim)})
    assert out.returncode == 1, (out.stdout, out.stderr)
    assert f"orphans not signalled, their GPU memory stays in use: {other} (belongs to" in out.stdout
    status = json.loads(subprocess.run([sys.executable, "-m", "eagle_console", "status", str(plan), "--json"],
                                       capture_output=True, text=True, timeout=60).stdout)
    assert status["phases"][0]["steps"][0]["status"] == "failed"
    assert not alive(mine) and alive(other)


def test_k_lets_root_pick_another_users_orphan_and_never_preselects_it(node, tmp_path):
    pytest.importorskip("textual")
    from textual.app import App

    from eagle_console.tui.screens.kill import KillScreen

    sim, _env, mine, other = node
    ctx = make_ctx(tmp_path, sim)

    class KillApp(App):
        pass

    app = KillApp()

    async def main() -> None:
        async with app.run_test(size=(160, 40)) as pilot:
            screen = KillScreen(ctx)
            app.push_screen(screen)
            await until(pilot, lambda: screen.state == "choosing", what="scan")
            assert screen.selected == {str(mine)}  # never the other user's
            assert "space picks it" in str(screen.query_one("DataTable").get_row(str(other))[-1])
            screen.query_one("DataTable").move_cursor(row=[h.pid for _n, h in screen.rows].index(other))
            await pilot.press("space")
            assert screen.selected == {str(mine), str(other)}
            await pilot.press("enter")
            await until(pilot, lambda: screen.state == "done", timeout=30, what="kill done")
            assert sorted(screen.report.killed) == sorted([mine, other]) and screen.report.refused == []

    asyncio.run(main())
    assert not alive(mine) and not alive(other)


def test_a_gpu_kill_steps_confirmation_says_it_will_fail_before_it_runs(node, tmp_path):
    """The console's confirmation of a gpu.kill step (ops.kill_preview, read from the same kill plan the step
    follows) names the other user's orphan it will not signal and says the step will fail for it."""
    from eagle_console.journal import Journal
    from eagle_console.ops import kill_preview

    sim, _env, mine, other = node
    journal = Journal(tmp_path / "journal.db")
    try:
        preview = kill_preview({"scope": "orphans", "grace": "1s"}, sim, journal).splitlines()
    finally:
        journal.close()
    assert any(line.startswith(f"SIGTERM {mine} orphan") for line in preview), preview
    user = pwd.getpwuid(OTHER_USER).pw_name
    assert f"not signalled {other}: belongs to {user} (root kills it only when picked)" in preview, preview
    assert preview[-1] == f"so the step will fail: 1 orphan(s) in scope will still hold GPU memory ({other})"
