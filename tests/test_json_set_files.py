"""json.set keeps what it found: the file's owner and mode, a symlinked config stays a link (written through),
and its backup is readable by the operator alone. Run through the real CLI and supervisor."""

from __future__ import annotations

import json
import os
import stat
import subprocess

import clikit
import pytest
from enginekit import write_plan


def cli(*args: str) -> subprocess.CompletedProcess:
    return clikit.run(args, timeout=60)


def plan_for(tmp_path, cfg):
    return write_plan(tmp_path, f"""
        [[phase]]
        id = "0"
        title = "P"
          [[phase.step]]
          id = "0.2"
          title = "fix config"
          uses = "json.set"
          with = {{ path = "{cfg}", set = {{ max_position_embeddings = 262144 }} }}
    """)


def run_and_rollback(plan) -> None:
    out = cli("run", str(plan), "0.2", "--wait")
    assert out.returncode == 0, out.stdout + out.stderr


@pytest.mark.skipif(os.geteuid() != 0, reason="chown to another user needs root")
def test_json_set_keeps_owner_and_mode_and_backs_up_0600(tmp_path):
    cfg = tmp_path / "config.json"
    original = b'{"max_position_embeddings": 131072}\n'
    cfg.write_bytes(original)
    os.chown(cfg, 65534, 65534)  # nobody: the operator's config, not ours
    os.chmod(cfg, 0o600)
    plan = plan_for(tmp_path, cfg)
    run_and_rollback(plan)
    st = cfg.stat()
    assert json.loads(cfg.read_text())["max_position_embeddings"] == 262144
    assert (st.st_uid, st.st_gid, stat.S_IMODE(st.st_mode)) == (65534, 65534, 0o600)
    backups = list(tmp_path.glob(".eagle-console/t/artifacts/0.2/backup-*.bin"))
    assert backups and all(stat.S_IMODE(b.stat().st_mode) == 0o600 for b in backups)
    out = cli("rollback", str(plan), "0.2", "--yes")
    assert out.returncode == 0, out.stdout + out.stderr
    st = cfg.stat()
    assert cfg.read_bytes() == original
    assert (st.st_uid, stat.S_IMODE(st.st_mode)) == (65534, 0o600)


def test_json_set_writes_through_a_symlinked_config(tmp_path):
    # The Hugging Face cache layout: snapshots/<rev>/config.json -> ../../blobs/<hash>
    blobs = tmp_path / "blobs"
    blobs.mkdir()
    blob = blobs / "abc123"
    original = b'{"max_position_embeddings": 131072}\n'
    blob.write_bytes(original)
    os.chmod(blob, 0o640)
    snap = tmp_path / "snapshots" / "rev"
    snap.mkdir(parents=True)
    link = snap / "config.json"
    link.symlink_to("../../blobs/abc123")
    plan = plan_for(tmp_path, link)
    run_and_rollback(plan)
    assert link.is_symlink() and os.readlink(link) == "../../blobs/abc123"
    assert json.loads(blob.read_text())["max_position_embeddings"] == 262144
    assert stat.S_IMODE(blob.stat().st_mode) == 0o640
    out = cli("rollback", str(plan), "0.2", "--yes")
    assert out.returncode == 0, out.stdout + out.stderr
    assert link.is_symlink() and blob.read_bytes() == original


def test_json_set_relative_path_is_from_the_plan_folder(tmp_path):
    """`path = "config.json"` names the file beside the plan (it was an internal error: ctx.plan is gone)."""
    (tmp_path / "config.json").write_text('{"max_position_embeddings": 131072}\n')
    plan = plan_for(tmp_path, "config.json")
    run_and_rollback(plan)
    assert json.loads((tmp_path / "config.json").read_text())["max_position_embeddings"] == 262144


def _strict(text: str):
    """RFC 8259 JSON only: Infinity, -Infinity and NaN are refused, as every strict reader does."""
    def refuse(constant):
        raise ValueError(f"not JSON: {constant}")
    return json.loads(text, parse_constant=refuse)


def test_json_set_refuses_a_number_json_cannot_write_back(tmp_path):
    """`1e400` parses to inf, and json.dumps wrote it back as `Infinity`: no longer JSON. Refused, naming the
    key and the number as the file says it; the file is left as it was."""
    cfg = tmp_path / "config.json"
    original = '{"rope_scaling": {"factor": 1e400, "type": "yarn"}, "max_position_embeddings": 4096}\n'
    cfg.write_text(original)
    plan = plan_for(tmp_path, cfg)
    out = cli("run", str(plan), "0.2", "--wait")
    assert out.returncode == 1, out.stdout + out.stderr
    said = (f"json.set: {cfg}: rope_scaling.factor is 1e400, a number outside what JSON can write back (it would "
            "become Infinity or NaN, which no JSON reader accepts): fix it in the file first; nothing was changed")
    assert said in out.stdout
    assert cfg.read_text() == original


def test_json_set_refuses_infinity_nan_in_its_set_table_and_writes_only_json(tmp_path):
    cfg = tmp_path / "config.json"
    cfg.write_text('{"a": 1.5, "big": 1e300}\n')
    plan = write_plan(tmp_path, f"""
        [[phase]]
        id = "0"
        title = "P"
          [[phase.step]]
          id = "0.2"
          title = "fix config"
          uses = "json.set"
          with = {{ path = "{cfg}", set = {{ scale = inf, rope = {{ theta = nan }} }} }}
    """)
    out = cli("validate", str(plan))
    assert out.returncode == 2
    assert "`set` scale = inf: JSON has no such number (it would be written as Infinity or NaN)" in out.stdout
    assert "`set` rope.theta = nan: JSON has no such number" in out.stdout
    plan = plan_for(tmp_path, cfg)  # a finite value: written, and what is written is RFC 8259 JSON
    assert cli("run", str(plan), "0.2", "--wait").returncode == 0
    assert _strict(cfg.read_text()) == {"a": 1.5, "big": 1e300, "max_position_embeddings": 262144}
