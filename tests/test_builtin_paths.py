"""A built-in's paths in `with` read as the plan's own paths do: `~` expanded, a relative path taken from the
plan's folder. Tried by hand: `json.set` with `path = "~/drafter/config.json"` failed "cannot read
<plan folder>/~/drafter/config.json: not found" (the plan's `state_dir`, `cwd` and `log` expand `~`), and
`extraction.verify` with a relative `path` looked in the step's `cwd` while `json.set` looked in the plan's
folder."""

from __future__ import annotations

import json
import os
import subprocess
import sys

PLAN = """[plan]
id = "paths"
title = "paths"

[[phase]]
id = "0"
title = "P"
  [[phase.step]]
  id = "0.1"
  title = "set a key in a file under ~"
  uses = "json.set"
  with = {{ path = "~/drafter/config.json", set = {{ max_position_embeddings = 262144 }} }}
  confirm = false
  [[phase.step]]
  id = "0.2"
  title = "verify samples in a folder beside the plan, run from elsewhere"
  uses = "extraction.verify"
  cwd = "{elsewhere}"
  with = {{ path = "samples" }}
"""


def test_tilde_and_relative_paths_in_with(tmp_path):
    home, plans, elsewhere = tmp_path / "home", tmp_path / "plans", tmp_path / "elsewhere"
    for d in (home / "drafter", plans / "samples", elsewhere):
        d.mkdir(parents=True)
    (home / "drafter" / "config.json").write_text('{"model_type": "llama"}\n')
    plan = plans / "plan.toml"
    plan.write_text(PLAN.format(elsewhere=elsewhere))
    env = {**os.environ, "HOME": str(home)}

    def run(step: str) -> subprocess.CompletedProcess:
        argv = [sys.executable, "-m", "eagle_console", "run", str(plan), step, "--yes", "--wait", "--force"]
        return subprocess.run(argv, capture_output=True, text=True, timeout=120, env=env)

    out = run("0.1")
    assert out.returncode == 0, out.stdout + out.stderr
    assert json.loads((home / "drafter" / "config.json").read_text())["max_position_embeddings"] == 262144
    assert not (plans / "~").exists()
    out = run("0.2")
    # the plan's samples folder, empty: found and checked, not "samples: not found" in the step's cwd
    assert "0 of 0 files checked; 0 bad" in out.stdout and "not found" not in out.stdout, out.stdout


def test_the_consoles_drafter_line_reads_the_drafter_the_step_reads(tmp_path, monkeypatch):
    """The Step pane's drafter line (ops/console.drafter_lines) and the agent's drafter tools read a relative
    `with.path` from the plan's folder, as the step does; before, from the console's own working directory:
    started elsewhere, it reported a drafter it could not find (MISSING_FILE only) beside a step that read
    the real one."""
    from eagle_console.ops.console import drafter_lines
    from eagle_console.plan.loader import load_plan

    plans, elsewhere = tmp_path / "plans", tmp_path / "elsewhere"
    (plans / "drafters" / "x").mkdir(parents=True)
    elsewhere.mkdir()
    (plans / "drafters" / "x" / "config.json").write_text('{"architectures": ["LlamaForCausalLMEagle3"]}')
    plan = plans / "plan.toml"
    plan.write_text('[plan]\nid = "d"\ntitle = "d"\n\n[[phase]]\nid = "0"\ntitle = "P"\n  [[phase.step]]\n'
                    '  id = "0.1"\n  title = "check"\n  uses = "drafter.check"\n'
                    '  with = { path = "drafters/x" }\n')
    monkeypatch.chdir(elsewhere)
    (line,) = drafter_lines(load_plan(plan), "0.1")
    assert "CONFIG_MISSING_FIELD" in line, line  # its config.json was read: the plan's drafter, not cwd's
