"""The GPUs pane's cluster part: with a plan's `[cluster]`, a section per node under this machine's GPUs.

Each node is read through its NodeAgent (ops.nodes.read_nodes, in the poller's thread, every NODES_S
seconds). A node that does not answer is shown as UNREACHABLE with its last reading and how old it is,
never as a node without GPUs.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

from rich.text import Text

from eagle_console.tui.panes._logview import Poller, QuietStatic
from eagle_console.tui.panes.gpu_rows import gpu_row, holders_table
from eagle_console.tui.theme import tstyle

if TYPE_CHECKING:
    from eagle_console.tui.context import ConsoleContext

NODES_S = 2.0  # a dead raylet shows within this plus read_nodes' 2 s timeout: under 5 s


def _age(seconds: float | None) -> str:
    """`live` while the readings keep coming: a count of seconds that changes every poll would redraw (and
    relayout) the pane each time for nothing; the age is shown once it says something."""
    if seconds is None:
        return "never read"
    return "live" if seconds < 2 * NODES_S else f"read {seconds:.0f}s ago"


def node_section(entry: dict[str, Any], width: int | None) -> Text:
    """One node: a heading (name, address, reading age or why it is unreachable), its GPUs, its holders."""
    from eagle_console.ops import gpus_of, holders_of

    name, addr, age = entry["name"], entry.get("address") or "?", entry.get("reading_age_s")
    if entry.get("reachable"):
        out = Text(f"node {name} · {addr} · {_age(age)}", style="bold", no_wrap=True, overflow="ellipsis")
    else:
        last = "no reading yet" if entry.get("gpus") is None else f"last reading {age:.0f}s old"
        out = Text(f"node {name} · {addr} · UNREACHABLE · {last} · {entry.get('error') or '?'}",  # cut from the end
                   style=tstyle("ec.error.bold"), no_wrap=True, overflow="ellipsis")
    gpus = gpus_of(entry)
    dim = not entry.get("reachable")
    for g in gpus:
        row = gpu_row(g, width)
        if dim:
            row.stylize("dim")
        out += Text("\n") + row
    if entry.get("holders") is not None:
        table = holders_table(holders_of(entry), width)
        if dim:
            table.stylize("dim")
        out += Text("\n") + table
    return out


def sections_text(entries: list[dict[str, Any]], width: int | None, here: str | None = None) -> Text:
    """Every node but `here` (this machine's node, whose GPUs the rows above already show)."""
    if not entries:
        return Text("cluster: no node carries an eagle-node:NAME resource", style=tstyle("ec.warn"))
    shown = [node_section(e, width) for e in entries if e["name"] != here]
    if here is not None:
        shown.insert(0, Text(f"node {here} is this machine: its GPUs are above", style="dim"))
    return Text("\n").join(shown)


def unreachable_entries(entries: list[dict[str, Any]], read_at: float, now: float) -> list[dict[str, Any]]:
    """The last readings, kept while the head is unreachable: each node UNREACHABLE, its reading's age as of
    `now`. The ages were the read's (`reading_age_s` at `read_at`, ~0 s for a live node): kept as they were,
    a node read two minutes before the head died said "last reading 0s old" for as long as it stayed dead."""
    aged = max(0.0, now - read_at)
    return [{**e, "reachable": False, "error": "its head is unreachable",
             "reading_age_s": None if e.get("reading_age_s") is None else e["reading_age_s"] + aged}
            for e in entries]


class NodeSections(QuietStatic):
    """`NodeSections(ctx)`: the cluster's nodes, read every NODES_S seconds off the event loop."""

    DEFAULT_CSS = "NodeSections { height: auto; text-wrap: nowrap; text-overflow: ellipsis; margin-top: 1; }"

    def __init__(self, ctx: ConsoleContext, *, refresh_s: float = NODES_S, **kwargs: Any) -> None:
        super().__init__("reading the cluster's nodes…", **kwargs)
        self.ctx = ctx
        self.entries: list[dict[str, Any]] | None = None
        self.read_at = 0.0  # when the read that gave `entries` ended (time.time(), as the ages are)
        self.failure: str | None = None  # why the last read failed, until one succeeds
        self.poller = Poller(self, refresh_s, self._read, self._show, self._failed, name="nodes-poll")

    def on_mount(self) -> None:
        self.poller.start()

    def on_unmount(self) -> None:
        self.poller.stop()

    def _read(self) -> list[dict[str, Any]]:
        from eagle_console.ops import read_nodes

        cluster = self.ctx.plan.cluster
        if cluster is None:  # the plan lost its [cluster] on a reload
            return []
        return read_nodes(cluster.address, self.ctx.journal)

    def _show(self, entries: list[dict[str, Any]]) -> None:
        self.entries, self.read_at = entries, time.time()
        self.failure = None
        self.draw()

    def draw(self) -> None:
        if self.failure is not None:  # a redraw (a resize, the width) keeps saying it, never "live" again
            self._draw_failure(self.failure)
        elif self.entries is not None:
            self.update(sections_text(self.entries, self.size.width or None, self.ctx.this_node(self.entries)))

    def on_resize(self) -> None:
        self.draw()

    def _failed(self, exc: BaseException) -> None:
        self.failure = str(exc)
        self._draw_failure(self.failure)

    def _draw_failure(self, why: str) -> None:
        """The head unreachable (cluster/link.py says since when): said first, the last readings kept below,
        each node UNREACHABLE with its age, never a blank pane or "0 GPUs"."""
        head = Text(f"cluster: {why}" if "head unreachable" in why else f"cluster: cannot read the nodes: {why}",
                    style=tstyle("ec.error.bold"), no_wrap=True, overflow="ellipsis")
        if not self.entries:
            self.update(head)
            return
        kept = unreachable_entries(self.entries, self.read_at, time.time())
        here = self.ctx.this_node(self.entries)
        self.update(head + Text("\n") + sections_text(kept, self.size.width or None, here))
