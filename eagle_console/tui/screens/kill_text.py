"""The K dialog's texts: the result of a kill on this machine and on cluster nodes, and what is left."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from rich.text import Text

from eagle_console.ops import KillRecord, freed_text, memory_by_gpu, orphans_left_on
from eagle_console.tui.theme import tstyle

if TYPE_CHECKING:
    from eagle_console.node.procs import Holder


def result_text(record: KillRecord) -> Text:
    killed, survivors = record.killed, record.survivors
    out = Text(f"killed {len(killed)}: {' '.join(map(str, killed)) or '-'}\n", style=tstyle("ec.ok.bold") if killed else "")
    if survivors:
        out += Text(f"SURVIVORS {len(survivors)}: {' '.join(map(str, survivors))}\n", style=tstyle("ec.error.bold"))
    if record.gone:
        out += Text(f"already gone: {' '.join(map(str, record.gone))}\n", style="dim")
    for r in record.refused:
        out += Text(f"not signalled {r['pid']}: {r['reason']}\n", style=tstyle("ec.warn"))
    out += Text(freed_text(record.freed_mib))
    return out


def kill_totals(record: KillRecord | None, nodes: dict[str, dict[str, Any]] | None) -> tuple[int, float]:
    """(processes killed, MiB freed) of this machine's kill and every cluster node's (issue 26: the summary
    counted this machine's record only)."""
    killed = len(record.killed) if record is not None else 0
    freed = record.freed_total if record is not None else 0.0
    for r in (nodes or {}).values():
        if not r.get("error"):
            killed += len(r.get("killed") or [])
            freed += sum((r.get("freed_mib") or {}).values())
    return killed, freed


def left_text(record: KillRecord | None, left: list[Holder] | None,
              nodes: dict[str, dict[str, Any]] | None = None) -> Text:
    """The summary once the kill is done: counted again after it, never the counts from before (issue #17).
    `left` is a fresh scan's holders, None when that scan failed; `nodes` the cluster nodes' kills, whose
    processes and MiB count in the totals (what is left there is on each node's line)."""
    killed, freed = kill_totals(record, nodes)
    head = f"after the kill: {killed} killed · {freed:.0f} MiB freed · "
    if record is None:
        return Text(head + "see each node's line above", style="bold")
    if nodes:
        head += "this machine: "
    if left is None:
        return Text(head + "could not scan again: see the GPUs pane", style=tstyle("ec.warn"))
    if not left:
        return Text(head + "no GPU holders left", style="bold")
    mem = ", ".join(f"GPU {g}: {mib:.0f} MiB" for g, mib in sorted(memory_by_gpu(left).items())) or "no memory held"
    orphans = sum(1 for h in left if h.cls == "orphan")
    return Text(head + f"{len(left)} GPU holder{'s' if len(left) != 1 else ''} left ({orphans} orphan"
                f"{'s' if orphans != 1 else ''}) · {mem}", style="bold")


def remote_text(out: dict[str, dict[str, Any]]) -> Text:
    """What each cluster node's agent did (ops.nodes.kill_on_nodes), one line per node."""
    text = Text()
    for node, r in sorted(out.items()):
        if r.get("error"):
            text += Text(f"node {node}: kill failed: {r['error']}\n", style=tstyle("ec.error.bold"))
            continue
        freed = sum((r.get("freed_mib") or {}).values())
        line = f"node {node}: killed {len(r['killed'])}: {' '.join(map(str, r['killed'])) or '-'} · freed {freed:.0f} MiB"
        if r.get("survivors"):
            line += f" · SURVIVORS {' '.join(map(str, r['survivors']))}"
        left = orphans_left_on(r)
        if left:  # another user's orphans there: their memory stays held
            line += f" · not signalled: {' '.join(map(str, left))} (their GPU memory stays in use)"
        failed = r.get("survivors") or left
        text += Text(line + "\n", style=tstyle("ec.error.bold" if failed else "ec.ok.bold"))
    text.rstrip()
    return text


def row_key(node: str | None, pid: int) -> str:
    """A row of the table: this machine's pids as they are, a cluster node's as NODE:PID (pids repeat)."""
    return str(pid) if node is None else f"{node}:{pid}"
