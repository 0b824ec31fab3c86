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

from eagle_console.demo.build import _toml_str
from eagle_console.engine.pyenv import own_entry
from eagle_console.ports import free_port

GPUS_PER_NODE = 8

PLAN_TEMPLATE = """\
# The multi-node demo: {count} simulated 8-GPU nodes ({names}), one SGLang server across all of them and an
# extraction pinned to node b. Built by `eagle-console demo --nodes {count}`.
[plan]
id = "demo-nodes"
title = "EAGLE-3 on Kimi-K2.5 across {count} simulated nodes"
node = "{count} x 8x RTX PRO 6000 Blackwell, NET/Socket between nodes (simulated)"

[vars]
root    = {root}
model   = "${{root}}/models/Kimi-K2.5"
drafter = "${{root}}/drafters/kimi-k25-eagle3"
python  = {python}
port    = {port}
data    = "${{root}}/data"

{cluster}[env]
{runner_env}EAGLE_SIM_STARTUP_S = "4"
NCCL_DEBUG = "INFO"
NCCL_SOCKET_IFNAME = "eth0"
GLOO_SOCKET_IFNAME = "eth0"

[[phase]]
id = "0"
title = "Serve across the nodes"
priority = "high"

  [[phase.step]]
  id = "0.1"
  title = "Launch SGLang with tp {tp} over nodes {names} (one rank per node)"
  priority = "high"
  uses = "sglang.server"
  timeout = "5m"
    [phase.step.with]
    model = "${{model}}"
    draft = "${{drafter}}"
    tp = {tp}
    port = "${{port}}"
    dist_port = {dist_port}
    nodes = {nodes}
    python = "${{python}}"
    speculative = {{ algorithm = "EAGLE3", num_steps = 2, eagle_topk = 1, num_draft_tokens = 3 }}

[[phase]]
id = "1"
title = "Extraction on node b while the server runs"
priority = "medium"

  [[phase.step]]
  id = "1.1"
  title = "Extract hidden states on node b (100 samples)"
{node_b}  run = [{python_exe}, "-m", "eagle_console.sim.extract", "--out", "${{data}}/hidden_states", "--samples", "100", "--rate", "15", "--bytes-per-sample", "3080000000"]
  log = "logs/extract-b.log"
  watch = {{ extraction = {{ log = "logs/extract-b.log", output = "${{data}}/hidden_states", pattern = "*.safetensors", total = 100 }} }}
  rollback = ["rm", "-rf", "${{data}}/hidden_states"]
"""


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
    root = Path(root).resolve()
    count = len(names)
    if cluster:
        header = f"[cluster]\naddress = {_toml_str(cluster)}\n\n"
        from eagle_console.cluster.local import auth_env  # what a client of the cluster needs

        auth = auth_env(token_path) if token_path else {"RAY_AUTH_MODE": "token"}
        runner_env = "".join(f"{k} = {_toml_str(v)}\n" for k, v in auth.items())
        node_b = '  node = "b"\n'
    else:  # the local runner: every node is this machine (nodes.json), the extraction runs here
        header, runner_env, node_b = "", 'EAGLE_CONSOLE_NODES = "${root}/nodes.json"\n', ""
    text = PLAN_TEMPLATE.format(
        count=count, names=", ".join(names), root=_toml_str(str(root)), tp=tp or GPUS_PER_NODE * count,
        python=_toml_str(f"{sys.executable} -m eagle_console.sim.sglang_server"), port=free_port(),
        dist_port=free_port(), nodes=json.dumps(names), python_exe=_toml_str(sys.executable),
        cluster=header, runner_env=runner_env, node_b=node_b)
    entry = own_entry()
    if entry:  # a source checkout: the ranks run this package's sim
        text = text.replace("[env]\n", f"[env]\nPYTHONPATH = {_toml_str(entry)}\n", 1)
    plan = root / "plans" / "demo.toml"
    plan.parent.mkdir(parents=True, exist_ok=True)
    plan.write_text(text)
    return plan


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
