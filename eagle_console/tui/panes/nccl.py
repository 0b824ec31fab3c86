"""The NCCL pane: the NCCL summary of the server's log (version, ranks initialised, rank×rank transports,
env overrides, findings; POSSIBLE_HANG weighs in the GPU pane's utilisation) and the raw NCCL lines."""

from __future__ import annotations

import time
from typing import Any

from rich.style import Style
from rich.text import Text

from eagle_console.tui.labels import findings_text
from eagle_console.tui.panes.follow import LogBatch, ServiceLogPane
from eagle_console.tui.theme import rich_style, tstyle

BUSY_PCT = 50.0  # a GPU above this is "busy" for the hang check


def gpu_busy_from(reading: Any) -> bool | None:
    """True when any GPU is busy, False when all are idle, None when utilisation is unknown."""
    if reading is None:
        return None
    utils = [g.utilization_pct for g in reading.sample.gpus if g.utilization_pct is not None]
    if not utils:
        return None
    return max(utils) >= BUSY_PCT


LEGEND = "P=P2P S=SHM N=NET C=COLLNET .=none (GPU pairs: src row → dst column)"


def nccl_text(summary: dict[str, Any]) -> Text:
    """What a short pane must keep first: the header (counts in GPU pairs, the findings' unit), then the
    findings whole (a 200-cell cut ended one mid-word), then env, the legend and the matrix under it."""
    from eagle_console.parse.nccl_matrix import format_matrix

    ranks, done = summary.get("ranks"), summary.get("init_complete", 0)
    out = Text(f"NCCL {summary.get('version') or 'version ?'}", style="bold")
    if ranks:
        style = tstyle("ec.ok") if done >= ranks else tstyle("ec.warn")
        out += Text(f" · Init COMPLETE {done}/{ranks}", style=style)
    else:
        out += Text(" · no communicator yet", style="dim")
    if summary.get("nnodes"):
        out += Text(f" · {summary['nnodes']} nodes ({', '.join(summary.get('node_ranks') or {})})")
    hosts = summary.get("hosts") or []
    if hosts:
        out += Text(f" · {len(hosts)} host{'s' if len(hosts) != 1 else ''}")
    counts = {k: v for k, v in (summary.get("transport_pairs") or {}).items() if v}
    if counts:
        out += Text(" · GPU pairs: " + ", ".join(f"{v} {k}" for k, v in counts.items()))
    out += findings_text(summary.get("findings", []), None, severity=True)
    env = summary.get("env") or {}
    if env:
        out += Text("\nenv " + " ".join(f"{k}={v}" for k, v in sorted(env.items())), style=tstyle("ec.info"))
    matrix = format_matrix(summary, max_ranks=16) if summary.get("pairs") else []
    if matrix:
        out += Text(f"\n{LEGEND}", style="dim") + Text("\n" + "\n".join(matrix))
    return out


class NcclPane(ServiceLogPane):
    """`NcclPane(ctx)`: follows the same log as the Server pane; `summary` is the latest NCCL summary."""

    BORDER_TITLE = "NCCL"
    DRAWS_WHEN_QUIET = True  # its hang check weighs how long the log has been silent
    DEFAULT_CSS = """
    NcclPane { height: 1fr; }
    NcclPane > .follow-head { height: auto; max-height: 80%; padding: 0 1; }  /* the findings over the raw lines */
    """

    def __init__(self, ctx: Any, **kwargs) -> None:
        super().__init__(ctx, **kwargs)
        self.summary: dict[str, Any] | None = None
        self.gpu_busy: bool | None = None  # from the GPU pane's latest reading (ctx.gpus), on the event loop
        self._parser: Any = None
        self._ranks: Any = None  # ops.nccl_ranks.RankNccl while a multi-node server's ranks are followed
        self._rank_step: str | None = None  # the followed service's step when it is multi-node
        self._rank_count = 0  # its ranks (`with.nodes`): the pane takes in each as the service records it
        self._rank_step_known = False  # decided once per followed file (reset_digest)

    def styler(self, line: str) -> Style | None:
        return rich_style("ec.error.bold") if " WARN " in line else None

    def reset_digest(self) -> None:
        from eagle_console.parse.nccl import NcclParser

        self._parser = NcclParser()
        if self._ranks is not None:
            self._ranks.close()
        self._ranks = None
        self._rank_step_known = False

    def _rank_nccl(self) -> Any:
        """Worker: a multi-node server's ranks, once its ranks.json lists them (the pane then merges their
        logs, as `nccl --service` does); None for a single-node one."""
        if not self._rank_step_known:  # which step the followed log is, once per file (not at every poll)
            from eagle_console.ops.logs import service_step

            step_id = service_step(self.ctx.plan, self.ctx.journal, self.step_id)
            step = self.ctx.plan.step(step_id) if step_id else None
            nodes = step.action.with_.get("nodes") if step is not None and step.action is not None else None
            self._rank_step = step.id if nodes else None
            self._rank_count = len(nodes) if isinstance(nodes, list) else 0
            self._rank_step_known = True
        if self._ranks is None and self._rank_step is not None:  # until its ranks.json lists a rank
            from eagle_console.ops.nccl_ranks import RankNccl

            ranks = RankNccl(self.ctx.plan.state_dir, self._rank_step, self._rank_count)
            self._ranks = ranks if ranks.logs else None
        return self._ranks

    def digest(self, lines: list[str]) -> Any:
        from eagle_console.parse.nccl import nccl_lines

        if self._parser is None or self.path is None:
            return None
        try:
            silent = max(0.0, time.time() - self.path.stat().st_mtime)
        except OSError:
            silent = None
        ranks = self._rank_nccl()
        if ranks is not None:  # every node's rank log, merged (rank 0's copy in the service log is left out)
            new = ranks.read_new()
            return ranks.summary(seconds_since_last_line=silent, gpu_busy=self.gpu_busy), new
        nccl = nccl_lines(lines)
        self._parser.feed(nccl)
        return self._parser.summary(seconds_since_last_line=silent, gpu_busy=self.gpu_busy), nccl

    def view_lines(self, batch: LogBatch) -> list[str]:
        return batch.digest[1] if batch.digest else []

    def show_digest(self, batch: LogBatch) -> None:
        self.gpu_busy = gpu_busy_from(self.ctx.gpus)  # the next digest's hang check uses it
        if self._parser is not None and self.ctx.gpus is not None:  # SHM_FALLBACK names the card class
            self._parser.gpu_names = [g.name for g in self.ctx.gpus.sample.gpus if g.name]
        if batch.digest is None:
            self.head.update(Text("no service log", style="dim"))
            return
        summary = batch.digest[0]
        if summary != self.summary:
            self.summary = summary
            self.head.update(nccl_text(summary))
