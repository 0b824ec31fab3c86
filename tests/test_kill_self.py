"""The console never kills itself, however it was started (attacker review: a console started as a
symlink `ec` to the entry point, or by `python -c "from eagle_console.cli import main; main()"`, has a
command line that names no eagle_console; opened on `extraction-sglang.toml` it matched the shipped
plan's rollback `match = ["sglang"]` and was killed). Our processes are told by a file they hold open
(node/selfmark.py), which no symlink, `-c` or process title changes; the command line stays one signal."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import psutil
import pytest
from conftest import REPO
from enginekit import wait_for, write_plan
from test_kill_protect import held_by, holding_env, open_console_argv
from test_tui_panes_gpus import stop_pids

from eagle_console.journal import Journal
from eagle_console.node.procs import eagle_console_kind
from eagle_console.ops.orphans import KillRecord
from eagle_console.plan.loader import load_plan, tomllib
from eagle_console.sim import gpustate

SHIPPED = REPO / "plans" / "extraction-sglang.toml"
SGLANG_HOLDER = ("import signal, sys\nfrom eagle_console.sim import gpustate\n"
                 "gpustate.hold(sys.argv[1], {3: 700.0})\nprint('up', flush=True)\nsignal.pause()")


@pytest.fixture
def sim(tmp_path, monkeypatch):
    monkeypatch.delenv("EAGLE_CONSOLE_GPU_BACKEND", raising=False)
    d = tmp_path / "sim"
    gpustate.create_node(d)
    monkeypatch.setenv("EAGLE_CONSOLE_SIM", str(d))
    return d


def shipped_rollback() -> dict:
    """The `with` of the shipped extraction plan's server rollback (`gpu.kill`, match = ["sglang"])."""
    steps = [s for p in tomllib.loads(SHIPPED.read_text())["phase"] for s in p.get("step", [])]
    (rollback,) = [s["rollback"] for s in steps if isinstance(s.get("rollback"), dict) and s["rollback"].get("uses") == "gpu.kill"]
    assert rollback["with"]["match"] == ["sglang"]
    return {**rollback["with"], "grace": "1s"}


def console_argv(form: str, tmp_path: Path, plan: Path, sim_dir: Path) -> list[str]:
    if form == "symlink":
        ec = tmp_path / "ec"
        ec.symlink_to(Path(sys.executable).parent / "eagle-console")
        return [str(ec), "tui", str(plan), "--sim", str(sim_dir)]
    return [sys.executable, "-c", "from eagle_console.cli import main; raise SystemExit(main())",
            "tui", str(plan), "--sim", str(sim_dir)]


def sglang_holder(sim_dir: Path) -> subprocess.Popen:
    """What the rollback is for: a server named sglang, in a session of its own."""
    proc = subprocess.Popen([sys.executable, "-c", SGLANG_HOLDER, str(sim_dir), "sglang::scheduler"],
                            stdout=subprocess.PIPE, text=True, start_new_session=True)
    assert proc.stdout.readline().strip() == "up"
    return proc


@pytest.mark.parametrize("form", ["symlink", "python-c"])
@pytest.mark.parametrize("face", ["gpu.kill", "orphans"])
def test_a_console_whose_command_line_hides_it_survives_the_shipped_rollback(tmp_path, sim, request, form, face):
    rollback = shipped_rollback()
    plan = write_plan(tmp_path, f"""
        [[phase]]
        id = "0"
        title = "P"
          [[phase.step]]
          id = "0.1"
          title = "The extraction server's rollback, as shipped"
          uses = "gpu.kill"
          with = {{ {", ".join(f"{k} = {json.dumps(v)}" for k, v in rollback.items())} }}
          confirm = false
    """, name="extraction-sglang.toml")
    env = holding_env(tmp_path, sim)
    argv = console_argv(form, tmp_path, plan, sim)
    assert eagle_console_kind(argv) is None  # the command line says nothing, and names sglang
    server = sglang_holder(sim)
    request.addfinalizer(lambda: stop_pids([server.pid]))
    console = open_console_argv(argv, env, own_session=True)  # another terminal
    request.addfinalizer(lambda: (console.kill(), console.wait()))
    wait_for(lambda: console.pid in held_by(sim), timeout=60)

    if face == "gpu.kill":
        out = subprocess.run([sys.executable, "-m", "eagle_console", "run", str(plan), "0.1", "--yes", "--wait"],
                             capture_output=True, text=True, timeout=120, env=env)
        assert out.returncode == 0, out.stdout + out.stderr
        journal = Journal.for_plan(load_plan(plan))
        try:
            (event,) = [e for e in journal.events() if e.kind == "kill"]
            (run,) = journal.runs("0.1")
        finally:
            journal.close()
        record = KillRecord.from_event(event)
        refused = {r["pid"]: r["reason"] for r in record.refused}
        killed = record.killed
        assert f"refused {console.pid}: eagle-console process" in Path(run.log).read_text()
    else:
        out = subprocess.run([sys.executable, "-m", "eagle_console", "orphans", str(plan), "--json", "--kill",
                              "--yes", "--scope", "match", *[a for m in rollback["match"] for a in ("--match", m)],
                              "--grace", "1s", "--sim", str(sim)],
                             capture_output=True, text=True, timeout=120, env=env, stdin=subprocess.DEVNULL)
        assert out.returncode == 0, out.stdout + out.stderr
        doc = json.loads(out.stdout)
        killed = doc["killed"]
        refused = {h["pid"]: h["reason"] for h in doc["holders"] if h["pid"] == console.pid}
        refused = {p: (r or "").rsplit("not signalled: ", 1)[-1] for p, r in refused.items()}
    assert refused.get(console.pid) == "eagle-console process"
    assert console.poll() is None and psutil.pid_exists(console.pid)
    assert killed == [server.pid]  # the kill itself worked: the server named sglang is gone


MARK_THEN_EXEC = """
import os, subprocess, sys
from eagle_console.node import selfmark
assert selfmark.mark(selfmark.ENGINE)
child = subprocess.Popen([sys.executable, "-c", "import signal; signal.pause()"])
print(child.pid, flush=True)
sys.stdin.readline()
os.execv(sys.executable, [sys.executable, "-c", "import signal; print('server', flush=True); signal.pause()"])
"""


def test_a_marked_action_that_execs_its_server_leaves_the_server_unmarked(request):
    """A service action execs the server in place: the server (same pid) must be killable, so the mark is
    close-on-exec; a child the action starts never inherits it either."""
    from eagle_console.node.selfmark import ENGINE, marked_kind

    proc = subprocess.Popen([sys.executable, "-c", MARK_THEN_EXEC], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            text=True)
    child = int(proc.stdout.readline())
    request.addfinalizer(lambda: (stop_pids([proc.pid, child]), proc.wait()))
    assert marked_kind(proc.pid) == ENGINE and marked_kind(child) is None
    proc.stdin.write("go\n")
    proc.stdin.flush()
    assert proc.stdout.readline().strip() == "server"
    assert marked_kind(proc.pid) is None
