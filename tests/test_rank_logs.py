"""A multi-node server's rank logs, looked up once (ops.nccl_ranks.rank_logs) for `nccl --service PLAN STEP`
and the console's NCCL pane (issue 30: the pane's lookup left out a step with one rank recorded, the CLI's
did not). The service records each rank as it starts it (sglang/multinode_run.save_ranks), so a record of
one rank is what the pane reads while rank 1 is starting, and all a launch that stopped after rank 0 leaves.
"""

from __future__ import annotations

import json
from pathlib import Path

import clikit
from test_multinode_nccl import node_log

from eagle_console.ops.nccl_ranks import RankNccl, rank_logs
from eagle_console.sglang.multinode_run import save_ranks
from eagle_console.sglang.noderunner import RankProcess

PLAN = '''[plan]
id = "ranks"
title = "two nodes"
state_dir = "{state}"

[[phase]]
id = "0"
title = "P"
  [[phase.step]]
  id = "0.1"
  title = "server"
  uses = "sglang.server"
  with = {{ model = "/m", nodes = ["a", "b"] }}
'''


def record(state: Path, ranks: int) -> list[Path]:
    """Rank 0 (and rank 1 when `ranks` is 2) recorded for step 0.1, each with its NCCL log written."""
    logs = []
    procs = []
    for rank, node in list(enumerate(("a", "b")))[:ranks]:
        log = state / "artifacts" / "0.1" / "ranks" / f"rank{rank}-{node}.log"
        log.parent.mkdir(parents=True, exist_ok=True)
        log.write_text("\n".join(node_log(rank)) + "\n")
        logs.append(log)
        procs.append(RankProcess(node=node, rank=rank, ref={"pid": 0}, log=str(log)))
    save_ranks(state / "artifacts" / "0.1", procs)
    return logs


def test_one_recorded_rank_is_a_rank(tmp_path):
    (rank0,) = record(tmp_path, 1)
    assert rank_logs(tmp_path, "0.1") == [("a", rank0)]
    assert rank_logs(tmp_path, "0.2") == []  # nothing recorded: a single-node service


def test_the_cli_and_the_pane_read_the_same_ranks(tmp_path):
    """`nccl --service` and the pane's RankNccl: rank 0 alone while it is the only one recorded, both once
    rank 1 is; the pane takes rank 1 in without being rebuilt."""
    state = tmp_path / "state"
    record(state, 1)
    plan = tmp_path / "plan.toml"
    plan.write_text(PLAN.format(state=state))
    pane = RankNccl(state, "0.1", expected=2)
    lines = pane.read_new()
    assert lines and all(line.startswith("[a] ") for line in lines)
    cli = clikit.run(["nccl", "--service", plan, "0.1", "--json"], timeout=60)
    assert '"node_ranks"' in cli.stdout, cli.stdout[-800:] + cli.stderr[-800:]
    assert set(json.loads(cli.stdout)["node_ranks"]) == {"a"}
    record(state, 2)
    lines = pane.read_new()
    assert [n for n, _ in pane.logs] == ["a", "b"] and any(line.startswith("[b] ") for line in lines)
    assert set(pane.summary()["node_ranks"]) == {"a", "b"}
    pane.close()
