"""The NCCL pane's view of a multi-node server: every rank's log followed, one merged diagnosis.

A multi-node `sglang.server` records its ranks in `<state>/artifacts/<step>/ranks.json`, each with a log on
this machine (sglang/multinode_run.py). `rank_logs` is the one lookup of them (`nccl --service PLAN STEP`
and the NCCL pane): every rank recorded, one or more. The service records them as it starts them, so a
rank is listed as soon as it runs; `RankNccl` follows each (bounded reads, regular files only:
node/tail.LogFollower), takes in the ones recorded later, and feeds their NCCL lines, each under its node's
name, to one parser, so the pane shows the `nccl --service` diagnosis (nNodes, NET/Socket between nodes,
missing nodes) as it grows.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from eagle_console.node.tail import LogFollower
from eagle_console.parse.nccl import NcclParser, nccl_lines
from eagle_console.parse.nccl_merge import feed_node, merged_summary
from eagle_console.statedir import artifacts_dir


def rank_logs(state_dir: Path, step_id: str) -> list[tuple[str, Path]]:
    """(node, log) of each rank the step recorded, in rank order: every one recorded (while the service starts
    them, the first ones; a launch that stopped after rank 0, rank 0 alone). Empty for a single-node service."""
    from eagle_console.sglang.multinode_run import load_ranks

    ranks = load_ranks(artifacts_dir(state_dir, step_id))
    return [(r.node, Path(r.log)) for r in sorted(ranks, key=lambda r: r.rank)]


class RankNccl:
    """Every rank log of a multi-node step, followed; `expected` ranks (its `nodes`): until that many are
    recorded, each read looks for the ones recorded since."""

    def __init__(self, state_dir: Path, step_id: str, expected: int) -> None:
        self.state_dir, self.step_id, self.expected = state_dir, step_id, expected
        self.logs: list[tuple[str, Path]] = []
        self.parser = NcclParser()
        self.followers: dict[str, LogFollower] = {}
        self.refresh()

    def refresh(self) -> None:
        if len(self.logs) >= self.expected:
            return
        for node, path in rank_logs(self.state_dir, self.step_id):
            if str(path) not in self.followers:
                self.logs.append((node, path))
                self.followers[str(path)] = LogFollower(path, start="begin")

    def read_new(self) -> list[str]:
        """The new NCCL lines of every rank (each prefixed with its node, for the pane's list)."""
        self.refresh()
        shown: list[str] = []
        for node, path in self.logs:
            lines = nccl_lines(self.followers[str(path)].read_new())
            if lines:
                feed_node(self.parser, node, lines)
                shown.extend(f"[{node}] {line}" for line in lines)
        return shown

    def summary(self, **live: Any) -> dict[str, Any]:
        return merged_summary(self.parser, [node for node, _ in self.logs], **live)

    def close(self) -> None:
        for f in self.followers.values():
            f.close()
