"""Without a GPU backend (no NVIDIA driver, NVML failing) a command that only reads the GPUs reports why
and exits 0, a step or command that must act on them or wait for them fails with the reason (issue 26).

Everything runs through the real CLI in subprocesses, on this machine's real "no driver" state: with
neither --sim nor EAGLE_CONSOLE_SIM the backend is `none`. (On a machine that has a driver the product's
own switch, EAGLE_CONSOLE_GPU_BACKEND=none, gives the same backend.)
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import clikit
import pytest
from enginekit import engine_for, write_plan

from eagle_console.ports import free_port
from eagle_console.processes import stop_session


def cli(*args: str, env: dict[str, str], timeout: float = 120) -> subprocess.CompletedProcess:
    return clikit.run(args, timeout=timeout, env=env)


@pytest.fixture
def no_gpus(tmp_path) -> tuple[dict[str, str], str]:
    """An environment whose GPU backend is `none`, and the reason that backend gives."""
    env = {k: v for k, v in os.environ.items() if k not in ("EAGLE_CONSOLE_SIM", "EAGLE_CONSOLE_GPU_BACKEND")}
    env["EAGLE_CONSOLE_KILL_GRACE"] = "2"
    doc = json.loads(cli("gpus", "--json", env=env).stdout)
    if doc["backend"] != "none":  # this machine has a driver
        env["EAGLE_CONSOLE_GPU_BACKEND"] = "none"
        doc = json.loads(cli("gpus", "--json", env=env).stdout)
    assert doc["backend"] == "none" and doc["error"], doc
    return env, doc["error"]


def status_of(path, env) -> dict[str, str]:
    doc = json.loads(cli("status", str(path), "--json", env=env).stdout)
    return {s["id"]: s["status"] for p in doc["phases"] for s in p["steps"]}


def gpu_step_plan(tmp_path, uses: str, with_: str):
    return write_plan(tmp_path, f"""
        [[phase]]
        id = "0"
        title = "Quick Probe"
          [[phase.step]]
          id = "0.1"
          title = "GPU step"
          uses = "{uses}"
          with = {with_}
          [[phase.step]]
          id = "0.2"
          title = "After it"
          needs = ["0.1"]
          run = "true"
    """)


@pytest.mark.parametrize(("uses", "with_"), [("gpu.kill", '{ scope = "all", grace = "2s" }'),
                                             ("gpu.wait_free", '{ max_used_mib = 1024, timeout = "5s" }')])
def test_gpu_step_without_backend_fails_and_keeps_the_next_blocked(tmp_path, no_gpus, uses, with_):
    """gpu.kill said "nothing to kill in scope 'all'", completed and unblocked 0.2; the reason must be
    in the log and in the run's record (the old run record said only "exit status 1")."""
    env, reason = no_gpus
    path = gpu_step_plan(tmp_path, uses, with_)
    out = cli("next", str(path), "--yes", "--wait", env=env)
    assert out.returncode == 1, out.stdout + out.stderr
    assert status_of(path, env) == {"0.1": "failed", "0.2": "pending"}
    (run,) = engine_for(path).journal.runs("0.1")
    assert run.outcome == "failed" and run.exit_code == 1
    assert f"{uses}: cannot read the GPUs (none): {reason}" in run.reason, run.reason
    assert reason in open(run.log).read()
    assert reason in out.stdout  # --wait's last line: "0.1: failed — exit status 1: gpu.kill: ..."
    # the step after it stays blocked: `next` has nothing to run, `run` refuses it
    again = cli("next", str(path), "--yes", "--wait", env=env)
    assert again.returncode == 1 and "0.1" in again.stderr, again.stdout + again.stderr
    refused = cli("run", str(path), "0.2", "--yes", "--wait", env=env)
    assert refused.returncode != 0 and status_of(path, env)["0.2"] == "pending"


def test_run_of_a_gpu_kill_step_without_backend_exits_1(tmp_path, no_gpus):
    env, reason = no_gpus
    path = gpu_step_plan(tmp_path, "gpu.kill", '{ scope = "orphans" }')
    out = cli("run", str(path), "0.1", "--yes", "--wait", env=env)
    assert out.returncode == 1, out.stdout + out.stderr
    assert "nothing to kill" not in out.stdout and "nothing was signalled" in out.stdout
    assert status_of(path, env)["0.1"] == "failed"


def test_server_rollback_without_backend_fails_instead_of_passing_unseen(tmp_path, no_gpus):
    """sglang.server's undo said "no GPU backend here; not waiting for memory release" and rolled back."""
    env, reason = no_gpus
    port = free_port()
    path = write_plan(tmp_path, f"""
        [env]
        EAGLE_SIM_STARTUP_S = "0.5"

        [[phase]]
        id = "0"
        title = "Quick Probe"
          [[phase.step]]
          id = "0.3"
          title = "Launch SGLang (simulated)"
          uses = "sglang.server"
          timeout = "2m"
            [phase.step.with]
            model = "/data/models/Kimi-K2.5"
            tp = 8
            port = {port}
            python = "{sys.executable} -m eagle_console.sim.sglang_server"
    """)
    try:
        up = cli("run", str(path), "0.3", "--yes", "--wait", env=env)
        assert up.returncode == 0 and "ready" in up.stdout, up.stdout + up.stderr
        down = cli("rollback", str(path), "0.3", "--yes", env=env)
        assert down.returncode == 1, down.stdout + down.stderr
        assert status_of(path, env)["0.3"] != "rolled_back"
        undo = [r for r in engine_for(path).journal.runs("0.3") if r.kind == "rollback"][-1]
        assert undo.outcome == "failed" and reason in undo.reason, undo.reason
        assert "cannot tell whether the server's GPU memory was released" in open(undo.log).read()
    finally:
        for run in engine_for(path).journal.runs():
            if run.sid:
                stop_session(run.sid, run.pgid, 1.0)


def test_gpus_and_orphans_agree_reading_and_only_the_kill_fails(no_gpus):
    """`orphans` (no --kill) exited 1 where `gpus` exited 0: the same missing backend, one rule. Readers
    report the reason and exit 0; `orphans --kill` could not look at the GPUs, so it exits 1."""
    env, reason = no_gpus
    for command in (["gpus"], ["gpus", "--json"], ["orphans"], ["orphans", "--json"]):
        out = cli(*command, env=env)
        assert (command, out.returncode) == (command, 0), out.stdout + out.stderr
        assert reason in out.stdout + out.stderr and "Traceback" not in out.stderr
    assert json.loads(cli("orphans", "--json", env=env).stdout)["error"].endswith(reason)
    out = cli("orphans", "--kill", "--yes", "--json", env=env)
    assert out.returncode == 1 and json.loads(out.stdout)["error"].endswith(reason)


@pytest.mark.parametrize("command", [["gpus"], ["gpus", "--json"], ["orphans"], ["orphans", "--kill", "--yes"],
                                     ["tui", "PLAN"]])
def test_sim_that_is_not_a_node_is_bad_input(tmp_path, no_gpus, command):
    """`gpus --sim /nonexistent` exited 0 (an empty `none` node); it is a wrong path: exit 2, one line."""
    env, _ = no_gpus
    plan = gpu_step_plan(tmp_path, "gpu.wait_free", "{}")
    argv = [str(plan) if a == "PLAN" else a for a in command]
    missing = tmp_path / "nonexistent"
    out = cli(*argv, "--sim", str(missing), env=env)
    assert out.returncode == 2, out.stdout + out.stderr
    assert out.stderr == f"eagle-console: --sim {missing}: no such folder\n"
    (tmp_path / "empty").mkdir()
    out = cli(*argv, "--sim", str(tmp_path / "empty"), env=env)
    assert out.returncode == 2 and "not a simulated node" in out.stderr and out.stderr.count("\n") == 1
    out = cli(*argv, env={**env, "EAGLE_CONSOLE_SIM": str(missing)})
    assert out.returncode == 2 and out.stderr == f"eagle-console: EAGLE_CONSOLE_SIM {missing}: no such folder\n"
