"""Two simulated nodes on this machine, described for the local NodeRunner, and a plan launching across them."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from enginekit import write_plan

from eagle_console.sim import gpustate


def make_nodes(root: Path, interfaces: dict[str, list[str]] | None = None,
               roots: dict[str, Path] | None = None) -> tuple[Path, dict[str, Path]]:
    """Sim dirs a/ and b/ (8 GPUs each, host names sim-a / sim-b) and the nodes file naming them."""
    sims = {}
    spec = {}
    for name in ("a", "b"):
        sim = root / f"node-{name}"
        gpustate.create_node(sim)
        node = json.loads((sim / "node.json").read_text())
        node["hostname"] = f"sim-{name}"
        (sim / "node.json").write_text(json.dumps(node))
        sims[name] = sim
        spec[name] = {"address": "127.0.0.1", "env": {"EAGLE_CONSOLE_SIM": str(sim)},
                      "interfaces": (interfaces or {}).get(name, ["lo", "eth0"])}
        if roots and name in roots:
            spec[name]["root"] = str(roots[name])
    nodes_file = root / "nodes.json"
    nodes_file.write_text(json.dumps(spec))
    return nodes_file, sims


def multinode_plan(root: Path, nodes_file: Path, port: int, dist: int, extra_with: str = "",
                   env: str = "") -> Path:
    model = root / "models" / "Kimi-K2.5"
    model.mkdir(parents=True, exist_ok=True)
    python = f"{sys.executable} -m eagle_console.sim.sglang_server"
    return write_plan(root, f"""
        [env]
        EAGLE_CONSOLE_NODES = "{nodes_file}"
        EAGLE_SIM_STARTUP_S = "1"
        EAGLE_SIM_WEIGHTS_GIB = "40"
        {env}

        [[phase]]
        id = "0"
        title = "Two nodes"
          [[phase.step]]
          id = "0.1"
          title = "Launch SGLang on nodes a and b (simulated)"
          uses = "sglang.server"
          timeout = "2m"
            [phase.step.with]
            model = "{model}"
            tp = 4
            port = {port}
            dist_port = {dist}
            nodes = ["a", "b"]
            python = "{python}"
            {extra_with}
    """)
