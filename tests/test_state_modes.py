"""The state dir is the operator's alone (issue #15): 0700 directories, 0600 files, even under umask 022,
and a run's spec holds only the env overrides, never the operator's environment (its secrets)."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
from pathlib import Path

from enginekit import write_plan

SECRET = "wJalrXUtnFEMI-not-a-real-key-7f3a"


def _cli(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess:
    # umask 022, as on most nodes: what the console creates must be private all the same
    return subprocess.run([sys.executable, "-m", "eagle_console", *args], capture_output=True, text=True,
                          timeout=120, env=env, preexec_fn=lambda: os.umask(0o022))


def test_state_dir_is_private_and_specs_hold_no_operator_secret(tmp_path):
    target = tmp_path / "config.json"
    target.write_text('{"a": 1}')
    plan = write_plan(tmp_path, f"""
        [env]
        HF_TOKEN = "hf_plan_token"

        [[phase]]
        id = "0"
        title = "P"
          [[phase.step]]
          id = "0.1"
          title = "a step that needs the operator's secret"
          run = 'printf %s "$AWS_SECRET_ACCESS_KEY" > {tmp_path}/seen'
          [[phase.step]]
          id = "0.2"
          title = "a built-in that keeps artifacts"
          uses = "json.set"
          with = {{ path = "{target}", set = {{ a = 2 }} }}
    """)
    env = {**os.environ, "AWS_SECRET_ACCESS_KEY": SECRET}
    for step in ("0.1", "0.2"):
        out = _cli("run", str(plan), step, "--yes", "--wait", env=env)
        assert out.returncode == 0, out.stdout + out.stderr
    out = _cli("rollback", str(plan), "0.2", "--yes", env=env)
    assert out.returncode == 0, out.stdout + out.stderr
    assert (tmp_path / "seen").read_text() == SECRET  # the step still sees the operator's environment

    state = tmp_path / ".eagle-console"
    assert (state / "t" / "journal.db").exists()
    wrong, specs = [], []
    if stat.S_IMODE(state.stat().st_mode) != 0o700:
        wrong.append(f".eagle-console {stat.S_IMODE(state.stat().st_mode):o}")
    for root, dirs, files in os.walk(state):
        for name in dirs + files:
            p = Path(root) / name
            mode = stat.S_IMODE(p.lstat().st_mode)
            want = 0o700 if p.is_dir() else 0o600
            if mode != want:
                wrong.append(f"{p.relative_to(state)} {mode:o}")
            if p.suffix == ".json" and p.parent.name == "runs":
                specs.append(p)
    assert not wrong, wrong
    assert specs
    for spec in specs:
        assert SECRET not in spec.read_text(), f"{spec.name} holds the operator's secret"


def test_an_open_journals_wal_and_shm_are_private(tmp_path):
    from eagle_console.journal import Journal

    old = os.umask(0o022)
    try:
        journal = Journal(tmp_path / "state" / "journal.db")
        journal.note("0.1", "HF token noted here")
    finally:
        os.umask(old)
    try:
        files = {p.name: stat.S_IMODE(p.stat().st_mode) for p in (tmp_path / "state").iterdir()}
        assert {"journal.db", "journal.db-wal", "journal.db-shm"} <= set(files)
        assert set(files.values()) == {0o600}, files
        assert stat.S_IMODE((tmp_path / "state").stat().st_mode) == 0o700
    finally:
        journal.close()
