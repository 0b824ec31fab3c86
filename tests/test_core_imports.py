"""The CLI's processes load neither Textual nor Rich, nor Ray for a single node: checked by running them.

That no module of the core imports Textual or Rich, nor any outside cluster/ imports Ray, is a contract of
pyproject.toml's [tool.importlinter] (tests/test_import_layers.py); these run real commands with the
imports blocked, which also catches an import made by name at run time."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path


def test_cli_entry_does_not_import_textual_or_torch():
    code = "import sys; import eagle_console.cli as c; c.build_parser(); " \
           "print(','.join(sorted(m for m in sys.modules if m.split('.')[0] in ('textual','torch','safetensors'))))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == ""


def test_a_missing_command_module_raises():
    """A command module that does not import is a bug, not a command group to skip in silence."""
    import pytest

    from eagle_console.cli import build_parser

    with pytest.raises(ModuleNotFoundError):
        build_parser(("eagle_console.cli.plan_cmds", "eagle_console.cli.no_such_cmds"))


# Installed by a sitecustomize on PYTHONPATH, so every process the CLI starts (supervisors, built-in actions)
# has it too. It records each attempt before refusing it: a caller swallowing the ImportError still fails.
BLOCKER = '''
import os, sys

class _NoTextualOrRich:
    def find_spec(self, name, path=None, target=None):
        if name.partition(".")[0] in ("textual", "rich"):
            with open(os.environ["EC_BLOCKED_LOG"], "a") as log:
                log.write(f"{name} imported by pid {os.getpid()}: {' '.join(sys.argv)}\\n")
            raise ImportError(f"{name} is blocked: the CLI outside the console must not import it")
        return None

sys.meta_path.insert(0, _NoTextualOrRich())
'''

PLAN = '''[plan]
id = "imports"
title = "the CLI without Textual or Rich"

[[phase]]
id = "0"
title = "P"
  [[phase.step]]
  id = "0.1"
  title = "a shell step"
  run = "echo hello; echo RESULT tok_s=12.5"
  rollback = "echo undone"
  [[phase.step]]
  id = "0.2"
  title = "a built-in step"
  needs = ["0.1"]
  uses = "json.set"
  with = {{ path = "{cfg}", set = {{ max_position_embeddings = 262144 }} }}
  [[phase.step]]
  id = "0.3"
  title = "a drafter check"
  uses = "drafter.check"
  with = {{ path = "{drafter}", target = "{target}" }}
'''


def test_cli_commands_run_without_textual_or_rich(tmp_path: Path):
    import json
    import os

    from eagle_console.sim import drafters, gpustate

    block = tmp_path / "block"
    block.mkdir()
    (block / "sitecustomize.py").write_text(BLOCKER)
    blocked = tmp_path / "blocked.log"
    env = {**os.environ, "EC_BLOCKED_LOG": str(blocked),
           "PYTHONPATH": os.pathsep.join([str(block), os.environ.get("PYTHONPATH", "")])}
    built = drafters.build(tmp_path / "models")
    cfg = tmp_path / "config.json"
    cfg.write_text('{"max_position_embeddings": 131072}\n')
    plan = tmp_path / "plan.toml"
    plan.write_text(PLAN.format(cfg=cfg, drafter=built["aqmedai"], target=built["target"]))
    sim = tmp_path / "sim"
    gpustate.create_node(sim, gpus=2)
    data = Path(__file__).parent / "data"
    extraction = tmp_path / "extract"
    extraction.mkdir()
    (extraction / "job.log").write_text((data / "tqdm_github.txt").read_text())
    # (argv, expected exit status): 1 where the command reports an error finding or a failed step.
    commands = [
        (["validate", plan], 0), (["status", plan, "--json"], 0), (["next", plan, "--yes", "--wait"], 0),
        (["run", plan, "0.2", "--yes", "--wait"], 0), (["run", plan, "0.3", "--yes", "--wait"], 1),
        (["log", plan, "0.1"], 0), (["mark", plan, "0.3", "skipped", "--note", "checked by hand"], 0),
        (["note", plan, "0", "a decision"], 0),
        (["rollback", plan, "0.2", "--yes"], 0), (["export", plan, "--format", "markdown"], 0),
        (["export", plan, "--format", "todowrite"], 0), (["gpus", "--sim", sim, "--json"], 0),
        (["orphans", plan, "--sim", sim, "--json"], 0), (["orphans", "--sim", sim, "--kill", "--yes"], 0),
        (["nccl", data / "nccl" / "nccltests166_shm_net.txt", "--matrix"], 0),
        (["server-log", data / "sglang" / "sglang4547_cuda_oom_traceback.txt"], 1),
        (["drafter", "check", built["k25"], "--target", built["target"]], 0),
        (["drafter", "compare-vocab", built["k25"], built["aqmedai"], "--json"], 0),
        (["extraction", extraction, "--json"], 0),
    ]
    failed = []
    for argv, expected in commands:
        r = subprocess.run([sys.executable, "-m", "eagle_console", *map(str, argv)], capture_output=True,
                           text=True, timeout=120, env=env, cwd=tmp_path)
        if r.returncode != expected or "Traceback" in r.stderr:
            failed.append(f"{' '.join(map(str, argv[:3]))}: exit {r.returncode}: {r.stderr.strip()[-400:]}")
    assert not failed, "\n".join(failed)
    assert not blocked.exists(), blocked.read_text()
    status = json.loads(subprocess.run([sys.executable, "-m", "eagle_console", "status", str(plan), "--json"],
                                       capture_output=True, text=True, timeout=60, env=env).stdout)
    steps = {s["id"]: s["status"] for s in status["phases"][0]["steps"]}
    assert steps == {"0.1": "completed", "0.2": "rolled_back", "0.3": "skipped"}


RAY_BLOCKER = BLOCKER.replace('("textual", "rich")', '("ray",)').replace("_NoTextualOrRich", "_NoRay")

SINGLE_NODE_PLAN = '''[plan]
id = "single"
title = "one node"

[[phase]]
id = "0"
title = "P"
  [[phase.step]]
  id = "0.1"
  title = "a shell step"
  run = "echo hello"
'''


def test_single_node_use_never_imports_ray(tmp_path: Path):
    """Issue #20: Ray is loaded only for a plan with [cluster] (or --cluster). `status`, `run`, `gpus`,
    `orphans` and the console over a plan without it must not even try to import it."""
    import os

    from eagle_console.sim import gpustate

    block = tmp_path / "block"
    block.mkdir()
    (block / "sitecustomize.py").write_text(RAY_BLOCKER)
    blocked = tmp_path / "blocked.log"
    env = {**os.environ, "EC_BLOCKED_LOG": str(blocked),
           "PYTHONPATH": os.pathsep.join([str(block), os.environ.get("PYTHONPATH", "")])}
    plan = tmp_path / "plan.toml"
    plan.write_text(SINGLE_NODE_PLAN)
    sim = tmp_path / "sim"
    gpustate.create_node(sim, gpus=1)
    commands = [["validate", plan], ["run", plan, "0.1", "--yes", "--wait"], ["status", plan, "--json"],
                ["gpus", "--sim", sim, "--json"], ["orphans", plan, "--sim", sim, "--json"]]
    for argv in commands:
        r = subprocess.run([sys.executable, "-m", "eagle_console", *map(str, argv)], capture_output=True,
                           text=True, timeout=120, env=env, cwd=tmp_path)
        assert r.returncode == 0 and "Traceback" not in r.stderr, (argv, r.stderr[-600:])
    console = ("import asyncio, sys\n"
               "from eagle_console.journal import Journal\n"
               "from eagle_console.plan.loader import load_plan\n"
               "from eagle_console.tui.app import make_app\n"
               f"plan = load_plan({str(plan)!r})\n"
               "app = make_app(plan, Journal.for_plan(plan))\n"
               "async def main():\n"
               "    async with app.run_test(size=(120, 40)) as pilot:\n"
               "        await pilot.pause(1.5)\n"
               "asyncio.run(main())\n"
               "print(','.join(m for m in sys.modules if m.split('.')[0] == 'ray'))\n")
    r = subprocess.run([sys.executable, "-c", console], capture_output=True, text=True, timeout=120, env=env)
    assert r.returncode == 0, r.stderr[-800:]
    assert r.stdout.strip() == ""
    assert not blocked.exists(), blocked.read_text()
