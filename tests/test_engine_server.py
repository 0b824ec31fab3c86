"""Launch → ready → bench → rollback of the simulated SGLang server, through the engine and the CLI.

The simulated server is the product's own (sim.md): real processes per TP rank holding simulated GPU
memory, a real HTTP server on 127.0.0.1. Rollback must leave no process of its session and free the memory.
"""

from __future__ import annotations

import json
import subprocess
import sys

import clikit
import pytest
from enginekit import engine_for, session_pids, write_plan

from eagle_console.ports import free_port
from eagle_console.sim import gpustate


@pytest.fixture
def server_plan(tmp_path, monkeypatch):
    monkeypatch.setenv("EAGLE_CONSOLE_KILL_GRACE", "3")
    sim = tmp_path / "sim"
    gpustate.create_node(sim)
    port = free_port()
    python = f"{sys.executable} -m eagle_console.sim.sglang_server"
    path = write_plan(tmp_path, f"""
        [vars]
        port = {port}

        [env]
        EAGLE_CONSOLE_SIM = "{sim}"
        EAGLE_SIM_STARTUP_S = "1"

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
            port = "${{port}}"
            python = "{python}"
            speculative = {{ algorithm = "EAGLE3", num_steps = 2, eagle_topk = 1, num_draft_tokens = 3 }}
            args = ["--disable-custom-all-reduce"]
          [[phase.step]]
          id = "0.4"
          title = "Benchmark"
          needs = ["0.3"]
          uses = "sglang.bench"
          with = {{ url = "http://127.0.0.1:${{port}}", requests = 3, max_new_tokens = 48 }}
    """)
    yield path, sim, port
    # A failed assertion must not leave a simulated server behind.
    from eagle_console.processes import stop_session

    for run in engine_for(path).journal.runs():
        if run.sid:
            stop_session(run.sid, run.pgid, 1.0)


def cli(*args: str, timeout: float = 120) -> subprocess.CompletedProcess:
    return clikit.run(args, timeout=timeout)


def test_launch_ready_bench_rollback_frees_everything(server_plan):
    path, sim, port = server_plan
    out = cli("run", str(path), "0.3", "--wait")
    assert out.returncode == 0, out.stdout + out.stderr
    assert "ready" in out.stdout
    eng = engine_for(path)
    run = eng.journal.latest_run("0.3")
    assert run.service and run.ready_at and not run.finished
    assert eng.journal.statuses()["0.3"] == "completed"
    held = {g for h in gpustate.holders(sim) for g in h.mib}
    assert held == set(range(8))
    assert len(session_pids(run.sid)) >= 10  # launcher, 8 schedulers, detokenizer

    out = cli("run", str(path), "0.4", "--wait")
    assert out.returncode == 0, out.stdout + out.stderr
    results = {r.name: r.value for r in eng.journal.results("0.4")}
    assert results["tok_s"] > 0 and results["accept_length"] > 1.0

    out = cli("bench", f"http://127.0.0.1:{port}", "--requests", "2", "--max-new-tokens", "16", "--json")
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout)["requests"] == 2

    out = cli("rollback", str(path), "0.3", "--yes")
    assert out.returncode == 1 and "0.4" in out.stderr + out.stdout  # 0.4 needs 0.3: cascade required
    out = cli("rollback", str(path), "0.3", "--yes", "--cascade")
    assert out.returncode == 0, out.stdout + out.stderr
    assert session_pids(run.sid) == []
    assert gpustate.holders(sim) == []
    statuses = eng.journal.statuses()
    assert statuses["0.3"] == "rolled_back" and statuses["0.4"] == "rolled_back"
