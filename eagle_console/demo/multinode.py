"""`eagle-console demo --nodes N`: N simulated 8-GPU nodes in one folder and a plan that uses them together.

Layout: `nodes/<name>/` one sim dir per node (host name `sim-<name>`, orphans on each), `nodes.json` the
local runner's description of them, `models/` and `drafters/` as in the one-node demo, `plans/demo.toml`.
The plan launches one simulated SGLang server across all nodes (`sglang.server` with `nodes`, tp 8 per
node) and runs an extraction pinned to node b (`node = "b"`). With the cluster extra, `demo --nodes` starts
a local Ray cluster on the node dirs (eagle_console.cluster.local) and the plan names it in `[cluster]`:
the ranks and the extraction are Ray jobs on their nodes. Without it the plan uses the local runner
(`nodes.json`) and the extraction runs here.
"""

from __future__ import annotations

import json
import shutil
import string
import sys
from pathlib import Path

from eagle_console.ports import free_port
from eagle_console.pyenv import own_entry

GPUS_PER_NODE = 8

def node_names(count: int) -> list[str]:
    if not 2 <= count <= 26:
        raise ValueError(f"--nodes must be between 2 and 26, got {count}")
    return list(string.ascii_lowercase[:count])


def build_nodes(root: Path, count: int, orphans: int = 1) -> Path:
    """The node dirs, nodes.json, models, drafters and the plan under `root`; returns the plan's path."""
    from eagle_console.sim import drafters, gpustate
    from eagle_console.sim import orphans as sim_orphans

    root = Path(root).resolve()
    names = node_names(count)
    stop_node_leftovers(root)
    spec = {}
    for name in names:
        sim = root / "nodes" / name
        gpustate.create_node(sim, gpus=GPUS_PER_NODE)
        node = json.loads((sim / "node.json").read_text())
        node["hostname"] = f"sim-{name}"  # NCCL's lines tell the nodes apart by it
        (sim / "node.json").write_text(json.dumps(node))
        spec[name] = {"address": "127.0.0.1", "env": {"EAGLE_CONSOLE_SIM": str(sim)}, "interfaces": ["lo", "eth0"]}
        if orphans:
            sim_orphans.leave_orphans(sim, orphans)
    (root / "nodes.json").write_text(json.dumps(spec, indent=2))
    for sub in ("models", "drafters", "data"):
        shutil.rmtree(root / sub, ignore_errors=True)
    built = drafters.build(root / "drafters")
    (root / "models").mkdir()
    shutil.move(str(built["target"]), root / "models" / "Kimi-K2.5")
    return write_plan(root, names)


def write_plan(root: Path, names: list[str], cluster: str | None = None, tp: int | None = None,
               token_path: Path | None = None) -> Path:
    """`plans/demo.toml` for nodes `names` under `root`; with `cluster` (a Ray address) its `[cluster]`, the
    extraction pinned to node b and the Ray token file (`token_path`) in the steps' environment."""
    from eagle_console.plan.text import (
        SPECULATIVE_CHAIN,
        Key,
        Phase,
        Step,
        extraction_step,
        plan_text,
        table,
        with_own_pythonpath,
    )

    root = Path(root).resolve()
    count = len(names)
    sections = []
    if cluster:
        from eagle_console.cluster.local import auth_env  # what a client of the cluster needs

        sections.append(table("cluster", [("address", cluster)]))
        runner_env: list[Key] = list((auth_env(token_path) if token_path else {"RAY_AUTH_MODE": "token"}).items())
        node_b = "b"
    else:  # the local runner: every node is this machine (nodes.json), the extraction runs here
        runner_env, node_b = [("EAGLE_CONSOLE_NODES", "${root}/nodes.json")], None
    tp = tp or GPUS_PER_NODE * count
    preamble = [f"The multi-node demo: {count} simulated 8-GPU nodes ({', '.join(names)}), one SGLang server "
                "across all of them and an",
                f"extraction pinned to node b. Built by `eagle-console demo --nodes {count}`."]
    plan = table("plan", [
        ("id", "demo-nodes"), ("title", f"EAGLE-3 on Kimi-K2.5 across {count} simulated nodes"),
        ("node", f"{count} x 8x RTX PRO 6000 Blackwell, NET/Socket between nodes (simulated)"),
    ])
    variables = table("vars", [
        ("root", str(root)), ("model", "${root}/models/Kimi-K2.5"), ("drafter", "${root}/drafters/kimi-k25-eagle3"),
        ("python", f"{sys.executable} -m eagle_console.sim.sglang_server"), ("port", free_port()),
        ("data", "${root}/data"),
    ])
    # a source checkout: the ranks run this package's sim
    env = table("env", with_own_pythonpath([*runner_env, ("EAGLE_SIM_STARTUP_S", "4"), ("NCCL_DEBUG", "INFO"),
                                            ("NCCL_SOCKET_IFNAME", "eth0"), ("GLOO_SOCKET_IFNAME", "eth0")],
                                           own_entry()))
    serve = Phase([("id", "0"), ("title", "Serve across the nodes"), ("priority", "high")], [
        Step([("id", "0.1"), ("title", f"Launch SGLang with tp {tp} over nodes {', '.join(names)} (one rank per node)"),
              ("priority", "high"), ("uses", "sglang.server"), ("timeout", "5m")],
             with_=[("model", "${model}"), ("draft", "${drafter}"), ("tp", tp), ("port", "${port}"),
                    ("dist_port", free_port()), ("nodes", names), ("python", "${python}"),
                    ("speculative", SPECULATIVE_CHAIN)]),
    ])
    extraction = Phase([("id", "1"), ("title", "Extraction on node b while the server runs"), ("priority", "medium")], [
        extraction_step("1.1", "Extract hidden states on node b (100 samples)", sys.executable,
                        "${data}/hidden_states", 100, "logs/extract-b.log", node=node_b,
                        # the Extraction tab follows it on node b (its log copied here as the job runs)
                        watch={"log": "logs/extract-b.log", "output": "${data}/hidden_states",
                               "pattern": "*.safetensors", "total": 100}),
    ])
    plan_path = root / "plans" / "demo.toml"
    plan_path.parent.mkdir(parents=True, exist_ok=True)
    plan_path.write_text(plan_text(preamble, [*sections, plan, variables, env], [serve, extraction]))
    return plan_path


def stop_node_leftovers(root: Path) -> list[int]:
    """Stop the simulated processes (servers' ranks, orphans) still holding memory on any demo node."""
    from eagle_console.demo.build import stop_leftovers

    folder = Path(root) / "nodes"
    sims = sorted(p for p in folder.iterdir() if p.is_dir()) if folder.is_dir() else []
    return [pid for sim in sims for pid in stop_leftovers(Path(root), sim)]


def cluster_starter():
    """The cluster extra's `start_local_cluster`, or None when this install has no cluster part (no Ray)."""
    import importlib.util

    if importlib.util.find_spec("ray") is None:
        return None
    from eagle_console.cluster import start_local_cluster

    return start_local_cluster
