"""A node step's log is the step's output: Ray's own lines stay out of it (real local cluster, clusterkit)."""

from __future__ import annotations

from clusterkit import cli, cluster_plan, needs_ray

pytestmark = needs_ray

STEPS = '''
  [[phase.step]]
  id = "a1"
  title = "on the head's node"
  node = "a"
  run = "echo ON_A"
'''


def test_a_node_a_step_log_has_no_ray_setup_line(ray_cluster, tmp_path):
    """Ray's dashboard logs "Runtime env is setting up." into the job's driver log on the head (node a):
    it was the first line of every node-a step's log."""
    plan = cluster_plan(tmp_path, ray_cluster, STEPS)
    r = cli("run", plan, "a1", "--yes", "--wait")
    assert r.returncode == 0, r.stdout + r.stderr
    log = cli("log", plan, "a1").stdout
    assert "ON_A" in log and "Runtime env is setting up" not in log, log
    assert "Runtime env is setting up" not in r.stdout, r.stdout  # `run --wait` follows the same copy
