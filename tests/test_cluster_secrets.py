"""No secret of a plan on a command line another user can read, nor in a file of Ray's temp dir, for a
step on a cluster node and for a multi-node rank: real Ray jobs on the local cluster (tests/clusterkit.py),
read by a real second local user (docs/security-secrets.md)."""

from __future__ import annotations

import time
from pathlib import Path

from clusterkit import cli, cluster_plan, needs_ray, step_state
from secretkit import command_lines_seen_by, files_leaking, leaks, mode, other_user, readable_files_leaking

from eagle_console.journal import Journal
from eagle_console.plan.loader import load_plan
from eagle_console.ports import free_port

pytestmark = needs_ray

HF_TOKEN = "hf_secretRAYc0ffee5a7b9"
PASSWORD = "pw-secret-RAY4u8Wq"
RANK_TOKEN = "hf_secretRANKd00d2e6f"


def _steps() -> str:
    return f'''
  [[phase.step]]
  id = "0.1"
  title = "wait on a URL with a password, on b"
  node = "b"
  uses = "http.wait"
  with = {{ url = "http://admin:{PASSWORD}@127.0.0.1:{free_port()}/health", timeout = "300s" }}
  timeout = "600s"

[env]
HF_TOKEN = "{HF_TOKEN}"
'''


def _log_or_empty(client, job_id: str) -> str:
    """The job's log, or "" while Ray's job head cannot serve it yet: after node b was started again by the
    test before this one, its dashboard agent (which serves the log) registers seconds later, and the head
    answered 500 "Port out of range 0-65535" meanwhile (a `.ci/run` here)."""
    from eagle_console.cluster.connect import RemoteError

    try:
        return client.get_job_logs(job_id)
    except RemoteError as exc:
        if "status code 500" not in str(exc):
            raise
        return ""


def _until(cond, timeout: float = 90.0, what: str = ""):
    deadline = time.monotonic() + timeout
    while not (value := cond()):
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.3)
    return value


def test_no_secret_on_a_command_line_or_in_rays_files_for_node_runs_and_ranks(ray_cluster, tmp_path):
    from eagle_console.cluster.jobs import job_client
    from eagle_console.cluster.noderunner import RayRunner

    plan = cluster_plan(tmp_path, ray_cluster, _steps())
    r = cli("run", plan, "0.1", "--yes")
    assert r.returncode == 0, r.stdout + r.stderr
    journal = Journal.for_plan(load_plan(plan))
    run = _until(lambda: (x := journal.latest_run("0.1")) and x.job_id and x, what="its Ray job")
    client = job_client(ray_cluster.address)
    runner = RayRunner(ray_cluster.address)
    rank = runner.start("b", 0, ["sleep", "300"], {"HF_TOKEN": RANK_TOKEN}, tmp_path / "rank0.log")
    try:
        _until(lambda: "waiting up to" in _log_or_empty(client, run.job_id), what="the built-in's first line")
        _until(lambda: runner.rank_pid(rank), what="the rank's session")
        with other_user() as user:
            seen = command_lines_seen_by(user)
            temp = ray_cluster.temp
            readable = {s: readable_files_leaking(user, temp, s) for s in (HF_TOKEN, PASSWORD, RANK_TOKEN)}
            listing = _as_user_ls(user, temp)
        # the jobs' processes were there to be seen: the scan cannot pass for want of them
        assert "eagle_console.engine.supervise" in seen and "eagle_console.cluster.rank_session" in seen, seen[-3000:]
        for secret in (HF_TOKEN, PASSWORD, RANK_TOKEN):
            assert leaks(seen, secret) == [], f"{secret} on a command line: {leaks(seen, secret)[:2]}"
        assert readable == {HF_TOKEN: [], PASSWORD: [], RANK_TOKEN: []}, readable
        # Ray's temp dir sits in a folder of ours alone: another user cannot even list it
        assert mode(temp.parent) == 0o700 and temp.parent.stat().st_uid == 0, oct(mode(temp.parent))
        assert listing.returncode != 0, listing.stdout
        # and no file of Ray's holds a secret for anyone (the job logs, the dashboard's, the GCS's)
        for secret in (HF_TOKEN, PASSWORD, RANK_TOKEN):
            assert files_leaking(temp, secret) == [], secret
    finally:
        runner.stop(rank, 2.0)
        cli("rollback", plan, "0.1", "--yes")
    assert step_state(plan, "0.1")[0] == "rolled_back"


def test_a_node_spec_file_is_private_and_gone_once_read(ray_cluster):
    """The spec a node's job reads: written there by its agent, 0600 in a 0700 folder of its own; taken
    (read and removed) by the job's entrypoint."""
    from eagle_console.cluster.connect import ask_agent
    from eagle_console.cluster.handoff import take_spec

    path = Path(ask_agent(ray_cluster.address, "b", "put_spec", {"env": {"HF_TOKEN": HF_TOKEN}}, timeout=60))
    assert (mode(path), mode(path.parent)) == (0o600, 0o700)
    assert take_spec(path) == {"env": {"HF_TOKEN": HF_TOKEN}}
    assert not path.exists() and not path.parent.exists()


def _as_user_ls(user: str, top: Path):
    from secretkit import as_user

    return as_user(user, "ls", str(top / "session_latest" / "logs"))
