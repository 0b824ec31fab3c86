"""Build the demo node in a folder: sim GPUs with two orphaned workers, drafters, a target config, and a
plan that mirrors plans/phase0-aqmedai-probe.toml plus a short extraction phase.

Building twice, or over a dirty folder, works: leftover simulated processes of an earlier demo in the same
folder are stopped first, the drafters and the plan are rewritten, and the journal is started afresh
(the old one is moved aside, never edited).
"""

from __future__ import annotations

import shutil
import sys
import time
from pathlib import Path

from eagle_console.ports import free_port
from eagle_console.pyenv import own_entry


def plan_for(root: str, python: str, port: int, python_exe: str, pythonpath: str | None = None) -> str:
    """The demo plan over the demo node at `root`: its server is `python` (the simulated SGLang), its steps'
    Python `python_exe`; `pythonpath`: a source checkout's root, first on its steps' PYTHONPATH."""
    from eagle_console.plan.text import (
        SPECULATIVE_CHAIN,
        Note,
        Phase,
        Step,
        extraction_step,
        plan_text,
        table,
        with_own_pythonpath,
    )

    preamble = ["The demo plan: Phase 0 of the EAGLE-3 effort (see plans/phase0-aqmedai-probe.toml) on a simulated",
                "8x RTX PRO 6000 node, plus a short hidden-state extraction. Built by `eagle-console demo`."]
    plan = table("plan", [
        ("id", "demo"), ("title", "EAGLE-3 drafter integration for Kimi-K2.5 (simulated node)"),
        ("node", "8x RTX PRO 6000 Blackwell, PCIe, no NVLink (simulated)"),
        ("todo_label", "Phase {id}: {title}"), ("baseline", {"tok_s": 82.0}),
    ])
    variables = table("vars", [
        ("root", root), ("sim", "${root}/sim"), ("model", "${root}/models/Kimi-K2.5"),
        ("drafter", "${root}/drafters/AQ-MedAI-Kimi-K2-Instruct-eagle3"),
        ("k25_drafter", "${root}/drafters/kimi-k25-eagle3"), ("python", python), ("port", port),
        ("url", "http://127.0.0.1:${port}"), ("data", "${root}/data"),
    ])
    env = table("env", with_own_pythonpath([
        ("EAGLE_CONSOLE_SIM", "${sim}"), ("EAGLE_SIM_STARTUP_S", "4"), ("NCCL_DEBUG", "INFO"),
        ("NCCL_PROTO", "LL"), ("NCCL_ALGO", "Ring"),
        Note("Uncomment, then roll back and run 0.3 again: the drafter loads but none of its tokens are accepted (as"),
        Note("with a d2t from another vocabulary); nothing in the log says so, the Metrics tab's ACCEPT_LENGTH_ONE"),
        Note("alarm does."),
        Note('EAGLE_SIM_ACCEPT = "none"'),
    ], pythonpath))
    probe = Phase([("id", "0"), ("title", "Quick Probe — try AQ-MedAI K2 drafter directly with K2.5"),
                   ("priority", "high")], [
        Step([("id", "0.1"), ("title", "Kill any existing server processes"),
              ("description", "Earlier sessions left orphaned sglang schedulers holding GPU memory; release every handle."), ("priority", "high"),
              ("uses", "gpu.kill"), ("with", {"scope": "all", "grace": "3s"})]),
        Step([("id", "0.2"), ("title", "Prepare AQ-MedAI drafter directory (fix config, verify vocab mappings)"),
              ("description", "SGLang enforces context limits and K2.5 expects 262144 (AQ-MedAI ships 131072)."),
              ("priority", "high"), ("uses", "json.set"),
              ("with", {"path": "${drafter}/config.json", "set": {"max_position_embeddings": 262144}}),
              ("check", {"uses": "drafter.check", "with": {"path": "${drafter}", "target": "${model}"}})]),
        Step([("id", "0.2b"), ("title", "Compare the AQ-MedAI vocab mapping with the K2.5 drafter's"),
              ("description", "Keep AQ-MedAI's own d2t: its lm_head was trained against it. Record the figures, decide by note."),
              ("priority", "medium"), ("uses", "drafter.compare_vocab"),
              ("with", {"a": "${drafter}", "b": "${k25_drafter}"})]),
        Step([("id", "0.3"), ("title", "Launch SGLang with K2.5 base + AQ-MedAI drafter"),
              ("description", "TP 8 with EAGLE3 (2 steps, top-k 1, 3 draft tokens); NCCL_DEBUG=INFO, so the NCCL tab shows what each GPU pair uses."), ("priority", "high"),
              ("needs", ["0.1", "0.2"]), ("uses", "sglang.server"), ("log", "logs/sglang-phase0.log"),
              ("timeout", "5m")],
             with_=[("model", "${model}"), ("draft", "${drafter}"), ("tp", 8), ("port", "${port}"),
                    ("python", "${python}"), ("speculative", SPECULATIVE_CHAIN), ("args", ["--trust-remote-code", "--enable-metrics"])]),
        Step([("id", "0.4"), ("title", "Benchmark single-stream throughput against the 82 tok/s baseline"),
              ("description", "Single stream, as the 82 tok/s baseline was measured; the from-scratch drafter gave 60 tok/s."),
              ("priority", "high"), ("needs", ["0.3"]), ("uses", "sglang.bench"),
              ("with", {"url": "${url}", "requests": 5, "max_new_tokens": 128})]),
    ])
    extraction = Phase([("id", "1"), ("title", "Hidden-state extraction (short run)"), ("priority", "medium"),
                        ("needs", ["0"])], [
        extraction_step("1.1", "Extract hidden states of layers 3/31/59 (300 samples)", python_exe,
                        "${data}/hidden_states", 300, "logs/extract.log",
                        watch={"log": "logs/extract.log", "output": "${data}/hidden_states",
                               "pattern": "*.safetensors", "total": 300},
                        description="The dump-patched server writes layers 3, 31 and 59 of every prefill: about 3 GB "
                                    "a sample, so watch the projection against free space."),
        Step([("id", "1.2"), ("title", "Verify extracted samples (keys, shapes, dtype, finite; longest included)"),
              ("description", "A sample of the files: the three layers' keys, shapes and dtype, finite values, and the longest sample."),
              ("needs", ["1.1"]), ("uses", "extraction.verify"),
              ("with", {"path": "${data}/hidden_states", "pattern": "*.safetensors", "sample": 20,
                        "hidden_size": 16})]),
    ])
    return plan_text(preamble, [plan, variables, env], [probe, extraction])


def stop_leftovers(root: Path, sim: Path | None = None) -> list[int]:
    """Stop simulated processes of an earlier demo in this folder (holders registered in its sim, or `sim`)."""
    from eagle_console.sim import gpustate

    sim = sim if sim is not None else root / "sim"
    pids = [h.pid for h in gpustate.holders(sim)] if (sim / "holders").is_dir() else []

    from eagle_console.processes import open_live, terminate_then_kill

    terminate_then_kill(open_live(pids), 3.0)
    return pids


def build_demo(root: Path, orphans: int = 2, port: int | None = None, container: bool = False) -> Path:
    """Build (or rebuild) the demo in `root`; returns the plan's path. `container`: the node's NVML
    reports host pids, as in an LXC container (gpustate.create_node)."""
    from eagle_console.sim import drafters, gpustate
    from eagle_console.sim import orphans as sim_orphans

    port = port or free_port()  # first: a range all taken stops the demo before it builds anything
    root = Path(root).resolve()
    root.mkdir(parents=True, exist_ok=True)
    stop_leftovers(root)
    gpustate.create_node(root / "sim", container=container)
    for sub in ("models", "drafters", "data"):
        shutil.rmtree(root / sub, ignore_errors=True)
    built = drafters.build(root / "drafters")
    (root / "models").mkdir()
    shutil.move(str(built["target"]), root / "models" / "Kimi-K2.5")
    state = root / "plans" / ".eagle-console"
    if state.exists():  # a fresh journal; the old one is kept beside it, untouched
        state.rename(root / "plans" / f".eagle-console.old-{int(time.time())}")
    plan_path = root / "plans" / "demo.toml"
    plan_path.parent.mkdir(exist_ok=True)
    python_cmd = f"{sys.executable} -m eagle_console.sim.sglang_server"
    # own_entry: a source checkout, not installed: the demo's steps run this package's sim, so say where it is
    plan_path.write_text(plan_for(str(root), python_cmd, port, sys.executable, own_entry()))
    if orphans:
        sim_orphans.leave_orphans(root / "sim", orphans)
    return plan_path
