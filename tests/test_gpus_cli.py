"""`gpus` and `orphans` commands: JSON shapes of cli.md, killing, exit codes; gpu.kill via the engine."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys

import clikit
import psutil
import pytest
from enginekit import engine_for, session_pids, wait_for, write_plan
from test_cli_conventions import on_tty

from eagle_console.processes import alive
from eagle_console.sim import gpustate
from eagle_console.sim.orphans import leave_orphans

GPU_KEYS = {"index", "name", "uuid", "memory_total_mib", "memory_used_mib", "utilization_pct", "temperature_c",
            "power_w", "power_limit_w", "pcie_gen", "pcie_width", "processes", "unattributed_mib"}
HOLDER_KEYS = {"pid", "ppid", "user", "command", "gpus", "used_mib", "class", "owner", "reason", "same_session"}


def cli(*args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    return clikit.run(args, timeout=120, env={**os.environ, **(env or {})})


@pytest.fixture
def orphaned(tmp_path):
    sim = tmp_path / "sim"
    gpustate.create_node(sim)
    pids = leave_orphans(sim, 2)
    yield sim, pids
    for pid in pids:
        try:
            psutil.Process(pid).kill()
        except psutil.Error:
            pass


def test_gpus_json_shape_with_orphans(orphaned):
    sim, pids = orphaned
    out = cli("gpus", "--json", "--sim", str(sim))
    assert out.returncode == 0, out.stderr
    doc = json.loads(out.stdout)
    assert set(doc) == {"schema", "backend", "error", "driver", "pid_namespace", "gpus"} and doc["backend"] == "sim"
    assert doc["pid_namespace"] == "local"
    assert len(doc["gpus"]) == 8 and all(set(g) == GPU_KEYS for g in doc["gpus"])
    procs = {p["pid"]: (g["index"], p) for g in doc["gpus"] for p in g["processes"]}
    assert set(procs) == set(pids)
    for gpu, p in procs.values():
        assert set(p) == {"pid", "used_mib", "command", "class", "owner", "same_session"}
        assert p["class"] == "orphan" and p["used_mib"] == 6120.0 and gpu in (3, 5)
        assert p["same_session"] is False  # left by a launcher in a session of its own
    assert doc["gpus"][3]["memory_used_mib"] == 6120.0


def test_gpus_without_driver_exits_0_with_reason():
    out = cli("gpus", "--json", env={"EAGLE_CONSOLE_GPU_BACKEND": "none"})
    assert out.returncode == 0
    doc = json.loads(out.stdout)
    assert doc["backend"] == "none" and doc["gpus"] == [] and doc["error"]


def test_orphans_lists_then_kills_and_frees(orphaned):
    sim, pids = orphaned
    listed = json.loads(cli("orphans", "--json", "--sim", str(sim)).stdout)
    assert set(listed) == {"schema", "holders", "killed", "survivors", "freed_mib", "error", "gpus"}  # cli.md Additions
    assert listed["error"] is None
    assert {h["pid"] for h in listed["holders"]} == set(pids)
    assert all(set(h) == HOLDER_KEYS and h["class"] == "orphan" for h in listed["holders"])
    assert listed["killed"] == [] and all(psutil.pid_exists(p) for p in pids)
    out = cli("orphans", "--json", "--kill", "--yes", "--grace", "2s", "--sim", str(sim))
    assert out.returncode == 0, out.stderr
    doc = json.loads(out.stdout)
    assert sorted(doc["killed"]) == sorted(pids) and doc["survivors"] == []
    assert doc["freed_mib"] == {"3": 6120.0, "5": 6120.0}
    assert gpustate.holders(sim) == []


def test_orphans_bad_input_is_one_line_exit_2(orphaned):
    sim, pids = orphaned
    out = cli("orphans", "--grace", "soon", "--sim", str(sim))
    assert out.returncode == 2 and out.stderr.count("\n") == 1 and "--grace" in out.stderr
    out = clikit.run(["orphans", "--kill", "--sim", sim], timeout=60)
    assert out.returncode == 2 and "--yes" in out.stderr
    assert all(psutil.pid_exists(p) for p in pids)  # nothing signalled without confirmation


def test_gpu_kill_and_wait_free_steps_through_the_engine(tmp_path, orphaned, monkeypatch):
    sim, pids = orphaned
    monkeypatch.setenv("EAGLE_CONSOLE_SIM", str(sim))
    path = write_plan(tmp_path, """
        [[phase]]
        id = "0"
        title = "P"
          [[phase.step]]
          id = "0.1"
          title = "Kill orphans"
          uses = "gpu.kill"
          with = { scope = "orphans", grace = "2s" }
          confirm = false
          [[phase.step]]
          id = "0.2"
          title = "GPUs free"
          uses = "gpu.wait_free"
          with = { max_used_mib = 1024, timeout = "20s" }
    """)
    eng = engine_for(path)
    run = eng.wait(eng.start("0.1"), timeout=60)
    log = open(run.log).read()
    assert run.exit_code == 0, log
    results = {r.name: r.value for r in eng.journal.results("0.1")}
    assert results["killed"] == 2 and results["freed_mib"] == 12240.0
    assert results["freed_mib_gpu3"] == 6120.0
    kills = [e for e in eng.journal.history("0.1") if e.kind == "kill"]
    assert len(kills) == 1 and sorted(kills[0].data["killed"]) == sorted(pids)
    assert not any(psutil.pid_exists(p) and psutil.Process(p).status() != psutil.STATUS_ZOMBIE for p in pids)
    run = eng.wait(eng.start("0.2"), timeout=60)
    assert run.exit_code == 0, open(run.log).read()
    assert {r.name for r in eng.journal.results("0.2")} >= {"wait_s", "max_used_mib"}


def test_gpu_kill_validate_rejects_bad_with():
    from eagle_console.engine.builtins import get_builtin

    kill = get_builtin("gpu.kill")
    assert kill.validate({"scope": "orphans"}) == []
    problems = kill.validate({"scope": "match", "match": ["("], "gpus": "0", "signal": "NOPE"})
    assert len(problems) == 3  # regex, gpus, signal
    assert get_builtin("gpu.wait_free").validate({"max_used_mib": -1, "timeout": "x"})


def test_orphans_with_plan_names_the_run_that_left_them(tmp_path):
    """A run's supervisor and main process die (kill -9), its GPU worker stays: that run's orphan."""
    sim = tmp_path / "sim"
    gpustate.create_node(sim)
    script = tmp_path / "worker.py"
    script.write_text("import sys, time\nfrom eagle_console.sim import gpustate\n"
                      "gpustate.hold(sys.argv[1], {2: 3000.0})\ntime.sleep(60)\n")
    shell = f"{sys.executable} {script} {sim} > /dev/null 2>&1 & sleep 60"
    path = write_plan(tmp_path, f"""
        [[phase]]
        id = "0"
        title = "P"
          [[phase.step]]
          id = "0.7"
          title = "leaves a worker behind"
          run = ["sh", "-c", {json.dumps(shell)}]
    """)
    eng = engine_for(path)
    run_id = eng.start("0.7")
    wait_for(lambda: gpustate.holders(sim), timeout=30)
    run = wait_for(lambda: (r := eng.journal.run(run_id)) and r.pid and r.sid and r, timeout=30)
    os.kill(run.supervisor_pid, signal.SIGKILL)
    os.kill(run.pid, signal.SIGKILL)
    wait_for(lambda: not alive(run.pid, run.pid_ctime), timeout=30)
    try:
        out = cli("orphans", str(path), "--json", "--sim", str(sim))
        assert out.returncode == 0, out.stderr
        (h,) = json.loads(out.stdout)["holders"]
        assert (h["class"], h["owner"], h["gpus"]) == ("orphan", "0.7", [2])
        assert h["reason"] == f"launcher of run {run.id} exited"
    finally:
        for pid in session_pids(run.sid):  # the worker and the shell's `sleep`
            os.kill(pid, signal.SIGKILL)


def test_orphans_without_gpus_says_so_once_and_never_none():
    """It printed "no GPU holders" (a guess: nothing could be read) and the backend's error twice."""
    out = cli("orphans", "--kill", "--yes", env={"EAGLE_CONSOLE_GPU_BACKEND": "none"})
    assert out.returncode == 1
    assert "no GPU holders" not in out.stdout, out.stdout
    assert out.stderr.count("was requested") == 1, out.stderr
    assert "cannot read the GPUs" in out.stderr and "nothing was signalled" in out.stderr
    doc = json.loads(cli("orphans", "--json", env={"EAGLE_CONSOLE_GPU_BACKEND": "none"}).stdout)
    assert doc["error"].startswith("cannot read the GPUs") and doc["holders"] == []


@pytest.mark.parametrize("columns", [80, 120])
def test_orphans_fits_the_terminals_width(orphaned, columns):
    """Seen by hand in tmux at 120 columns: each holder was one line of ~170 characters, wrapped into two rows
    (three at 80). At a terminal no line is wider than it, and nothing is lost but the command's tail; piped,
    the one-line-a-holder form is kept for scripts, whatever COLUMNS says."""
    sim, pids = orphaned
    # the window's size says it: pytest-xdist's workers export COLUMNS=80, which an empty value sets aside
    text = on_tty("orphans", "--sim", sim, env={"COLUMNS": "", "LINES": ""}, columns=columns).replace("\r\n", "\n")
    lines = text.splitlines()
    assert max(len(line) for line in lines) <= columns, lines
    for pid in pids:
        (line,) = [ln for ln in lines if ln.split()[:1] == [str(pid)]]
        assert " orphan " in line, lines
    reasons = [h["reason"] for h in json.loads(cli("orphans", "--json", "--sim", str(sim)).stdout)["holders"]]
    assert reasons and all(r[:20] in text for r in reasons), (reasons, lines)  # beside or below
    piped = cli("orphans", "--sim", str(sim), env={"COLUMNS": "80"}).stdout.splitlines()
    (row,) = [ln for ln in piped if ln.split()[:1] == [str(pids[0])]]
    assert len(row) > 100 and reasons[0] in row, piped


def test_orphans_fits_the_terminals_width_with_chinese_in_the_command(tmp_path):
    """Seen by hand in tmux at 80 columns: a sim node in a folder named in Chinese put the orphans' command
    line 4 cells past the edge (each Chinese character 2 cells, cut by characters), its tail wrapped onto a
    row of its own. Here the Chinese comes early in the command (an -X option the interpreter keeps), so it
    falls inside the window whatever this Python's path; measured with Rich's cell widths (what a terminal
    draws), not with the product's own."""
    from rich.cells import cell_len

    sim = tmp_path / "sim"
    gpustate.create_node(sim)
    worker = subprocess.Popen([sys.executable, "-X", "训练任务=第二批次", "-m", "eagle_console.sim.orphans", "worker",
                               "--sim", str(sim), "--mib", "3000", "--gpu", "2"],
                              stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    try:
        assert worker.stdout.readline().strip() == "holding"
        text = on_tty("orphans", "--sim", sim, env={"COLUMNS": "", "LINES": ""}, columns=80)
    finally:
        worker.kill()
        worker.wait()
    lines = text.replace("\r\n", "\n").splitlines()
    assert max(cell_len(line) for line in lines) <= 80, [(cell_len(line), line) for line in lines]
    assert any("训练任务=" in line for line in lines), lines  # cut at its tail, not dropped


def test_a_note_wraps_in_cells_and_keeps_every_character():
    """A reason (a path, a user's sentence in Chinese, which has no spaces) wrapped under a holder: no line
    past the edge, nothing dropped."""
    from rich.cells import cell_len

    from eagle_console.cli.termtext import wrap

    text = "not signalled: belongs to 训练用户 (python3 /tmp/训练脚本/非常长的中文路径名称没有空格也要换行.py --flag)"
    for width in (20, 31, 80):
        lines = wrap(text, width, first=" " * 8, rest=" " * 10)
        assert max(map(cell_len, lines)) <= width, (width, lines)
        assert "".join(lines).replace(" ", "") == text.replace(" ", ""), (width, lines)


def test_a_live_run_of_a_plan_not_given_says_whose_it_is(held_run):
    """Seen by hand over ssh: `eagle-console orphans` typed with no PLAN listed a running server's eight
    schedulers, 80 GB each, as `other` with a blank reason, an invitation to `kill -9`. They are still
    `other` (no scope takes more or less), and the reason names the run, its step and its state dir, read
    from the live supervisor above them."""
    plan, sim, worker = held_run
    listed = json.loads(cli("orphans", "--json", "--sim", str(sim)).stdout)["holders"]
    (h,) = [h for h in listed if h["pid"] == worker]
    assert h["class"] == "other" and h["owner"] is None, h
    state = re.escape(str(plan.parent))
    assert re.fullmatch(rf"eagle-console run \d+, step 0\.1, state {state}/\.eagle-console/"
                        r"\S+ \(supervisor \d+\)", h["reason"] or ""), h
    killed = cli("orphans", "--kill", "--yes", "--json", "--sim", str(sim))
    assert json.loads(killed.stdout)["killed"] == [] and alive(worker), killed.stdout
    given = json.loads(cli("orphans", str(plan), "--json", "--sim", str(sim)).stdout)["holders"]
    (h,) = [h for h in given if h["pid"] == worker]
    assert (h["class"], h["owner"]) == ("tracked", "0.1"), h
