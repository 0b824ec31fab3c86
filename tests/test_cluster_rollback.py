"""A node step's rollback runs where the step ran: as a Ray job on its node (real local cluster, clusterkit).

Both nodes of the test cluster are this machine, told apart by their environment: each raylet has its own
EAGLE_CONSOLE_SIM (the node's sim dir), which only that node's processes see. A file a step on b makes in
b's sim dir is b's; its rollback must remove it there, and say it ran there.
"""

from __future__ import annotations

from pathlib import Path

from clusterkit import cli, cluster_plan, needs_ray, step_state

from eagle_console.engine.rollback import plan_rollback
from eagle_console.engine.runner import Engine
from eagle_console.journal import Journal
from eagle_console.plan.loader import load_plan

STEPS = '''
  [[phase.step]]
  id = "b5"
  title = "makes a file on b"
  node = "b"
  run = 'echo made > "$EAGLE_CONSOLE_SIM/made-by-b5"'
  rollback = 'echo "UNDO_SIM=$EAGLE_CONSOLE_SIM"; rm -f "$EAGLE_CONSOLE_SIM/made-by-b5"'
  [[phase.step]]
  id = "z1"
  title = "on a node the cluster does not have"
  node = "zz"
  run = "true"
  rollback = "true"
  [[phase.step]]
  id = "j1"
  title = "a built-in on b"
  node = "b"
  uses = "json.set"
  with = { file = "conf.json", set = { a = 1 } }
'''


def _journal(plan: Path) -> Journal:
    return Journal.for_plan(load_plan(plan))


@needs_ray
def test_a_node_steps_rollback_runs_on_that_node_and_undoes_there(ray_cluster, tmp_path):
    plan = cluster_plan(tmp_path, ray_cluster, STEPS)
    made = ray_cluster.nodes["b"].sim / "made-by-b5"
    made.unlink(missing_ok=True)
    r = cli("run", plan, "b5", "--yes", "--wait")
    assert r.returncode == 0, r.stdout + r.stderr
    assert made.exists()  # the run was on b: b's sim dir

    r = cli("rollback", plan, "b5", "--yes")
    assert r.returncode == 0, r.stdout + r.stderr
    assert not made.exists(), "the rollback said it ran, but b's file is still there"
    assert step_state(plan, "b5")[0] == "rolled_back"
    undo = _journal(plan).latest_run("b5", kind="rollback")
    assert undo.kind == "rollback" and undo.outcome == "completed", undo
    assert undo.node == "b" and undo.pid, undo  # its process was b's, journaled as such
    log = Path(undo.log).read_text()
    assert f"UNDO_SIM={ray_cluster.nodes['b'].sim}\n" in log, log  # it ran with b's environment
    assert "the undo runs on node b as Ray job" in log, log
    assert "Runtime env is setting up" not in log, log  # Ray's line, not the undo's


@needs_ray
def test_a_node_steps_rollback_fails_when_its_node_is_not_there(ray_cluster, tmp_path):
    plan = cluster_plan(tmp_path, ray_cluster, STEPS)
    assert cli("mark", plan, "z1", "completed").returncode == 0
    r = cli("rollback", plan, "z1", "--yes")
    assert r.returncode != 0, r.stdout + r.stderr
    assert "node zz is unreachable" in r.stdout + r.stderr, r.stdout + r.stderr
    assert "rolled back" not in r.stdout.replace("not rolled back", ""), r.stdout
    assert step_state(plan, "z1")[0] == "completed"
    undo = _journal(plan).latest_run("z1", kind="rollback")
    assert undo.kind == "rollback" and undo.outcome == "failed" and "node zz is unreachable" in undo.reason


def test_a_node_steps_builtin_undo_is_planned_on_its_node(tmp_path):
    """No cluster needed: what the rollback's supervisor is told to do (node, cluster) for a built-in undo."""
    plan_path = tmp_path / "plan.toml"
    plan_path.write_text('[plan]\nid = "c"\ntitle = "cluster"\n\n[cluster]\naddress = "127.0.0.1:1"\n\n'
                         f'[[phase]]\nid = "0"\ntitle = "P"\n{STEPS}')
    plan = load_plan(plan_path)
    journal = Journal.for_plan(plan)
    journal.set_status("j1", "completed", None, source="mark")
    [item] = plan_rollback(Engine(plan, journal), "j1")
    assert item.argv and item.node == "b" and item.cluster == "127.0.0.1:1", item
    assert "(on node b)" in item.description
