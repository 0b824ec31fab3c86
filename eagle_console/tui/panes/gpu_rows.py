"""One GPU's row and the holders table, measured in cells: the GPUs pane draws them for this machine and
tui/panes/gpu_nodes.py for each cluster node (so neither pane module imports the other)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from rich.text import Text

from eagle_console.tui.cells import cells, cut
from eagle_console.tui.theme import tstyle

if TYPE_CHECKING:
    from eagle_console.node.gpus import GpuSample
    from eagle_console.node.procs import Holder

BAR = 12
MIN_BAR = 5  # a narrower memory bar says nothing
NA = "N/A"




def short_name(name: str | None) -> str:
    if not name:
        return NA
    for prefix in ("NVIDIA ", "Tesla "):
        name = name.replace(prefix, "")
    return name.replace(" Blackwell", "").replace(" Workstation Edition", "")[:16]


def _num(value: float | None, fmt: str) -> str:
    return NA if value is None else format(value, fmt)


def _gib(mib: float | None) -> float | None:
    return None if mib is None else mib / 1024


def mem_bar(used: float | None, total: float | None, width: int = BAR) -> Text:
    if used is None or not total:
        return Text("?" * width, style="dim")
    frac = max(0.0, min(1.0, used / total))
    full = max(1, round(frac * width)) if used > 0 else 0  # 9 GiB of 140 still shows: something holds memory
    style = tstyle("ec.error") if frac > 0.9 else tstyle("ec.warn") if frac > 0.6 else tstyle("ec.ok")
    return Text("█" * full, style=style) + Text("░" * (width - full), style="dim")


def gpu_row(g: GpuSample, width: int | None = None) -> Text:
    """One line per GPU, so all eight fit in the pane: when `width` is short of the full row, the name
    goes first (the border title names the model when every GPU shares it), then the PCIe link, then the
    power limit, then the memory bar narrows, then power and temperature go. Never wraps."""
    util = f"{_num(g.utilization_pct, '.0f')}%" if g.utilization_pct is not None else NA
    temp = f"{_num(g.temperature_c, '.0f')}°C" if g.temperature_c is not None else NA
    link = f"Gen{g.pcie_gen}x{g.pcie_width}" if g.pcie_gen and g.pcie_width else "PCIe N/A"
    used, total = _num(_gib(g.memory_used_mib), ".1f"), _num(_gib(g.memory_total_mib), ".1f")
    gib, short = f"{used}/{total} GiB", f"{used}/{total}G"
    power, watts = f"{_num(g.power_w, '.0f')}/{_num(g.power_limit_w, '.0f')}W", f"{_num(g.power_w, '.0f')}W"
    # (name, memory as (text, cells), power as (text, cells) or None, temperature, link), widest first;
    # the memory bar takes what the line has left, up to BAR cells
    layouts = (
        (True, (gib, 15), (power, 9), True, True),
        (False, (gib, 15), (power, 9), True, True),
        (False, (gib, 15), (power, 9), True, False),
        (False, (gib, 15), (watts, 5), True, False),
        (False, (short, 10), (watts, 5), True, False),
        (False, (short, 10), None, True, False),
        (False, (short, 10), None, False, False),
    )
    for with_name, (mem, mem_w), pw, with_temp, with_link in layouts:
        head = f"{g.index:<2}" + (f"{short_name(g.name):<16} " if with_name else "")
        tail = (f" {mem:>{mem_w}} {util:>4}" + (f" {temp:>5}" if with_temp else "")
                + (f" {pw[0]:>{pw[1]}}" if pw else "") + (f" {link}" if with_link else ""))
        bar = BAR if width is None else min(BAR, width - cells(head) - cells(tail))
        if bar >= (BAR if with_name else MIN_BAR):  # the name goes before the bar narrows
            break
    bar = max(bar, MIN_BAR)
    row = Text(head, no_wrap=True, overflow="ellipsis")
    row += mem_bar(g.memory_used_mib, g.memory_total_mib, bar)
    row += Text(tail)
    return row


FROM_THIS_TERMINAL = "started from this terminal"  # an orphan of the console's own session (node.kill)


def holder_command(h: Holder, limit: int = 60) -> str:
    """The command as the operator reads it: the program's name rather than its path (a venv's
    `/…/.venv/bin/python` takes a narrow pane's whole width), and an orphan's reason before it, where a cut
    line cannot lose it."""
    program, _, rest = h.command.partition(" ")
    command = cut(f"{program.rsplit('/', 1)[-1]} {rest}".strip(), limit)  # cells: a CJK argument takes 2 each
    if h.cls != "orphan" or not h.reason:
        return command
    return f"{h.reason} · {FROM_THIS_TERMINAL} · {command}" if h.same_session else f"{h.reason} · {command}"


CLASS_ORDER = {"orphan": 0, "other": 1, "tracked": 2}  # what the operator acts on first: a short pane shows it


NARROW_TABLE = 60  # cells: below this the holders table drops OWNER (a tracked one names its step instead)


def holders_table(holders: list[Holder], width: int | None = None) -> Text:
    # One line per process, cut with … at the pane's edge rather than wrapped under the columns; orphans
    # first, so a pane cut by the screen's height still shows them.
    holders = sorted(holders, key=lambda h: CLASS_ORDER.get(h.cls, 1))
    narrow = width is not None and width < NARROW_TABLE
    head = "PID    GPU   MiB CLASS   COMMAND" if narrow else "PID      GPU  MiB     CLASS    OWNER  COMMAND"
    out = Text(head + "\n", style="bold", no_wrap=True, overflow="ellipsis")
    if not holders:
        return out + Text("no GPU processes", style="dim")
    for h in holders:
        gpus = ",".join(map(str, h.gpus)) or ("-" if h.gpus_known else "?")  # ?: CUDA opened every GPU
        mib = f"{h.used_mib:.0f}" if h.used_mib is not None else "fd"
        command = holder_command(h)
        if not h.in_namespace:
            command = f"{command} (not in this PID namespace)"
        style = tstyle({"orphan": "ec.error.bold", "tracked": "ec.ok"}.get(h.cls, ""))
        if narrow:
            rest = f"step {h.owner}" if h.owner else command
            out += Text(f"{h.pid:<6} {gpus:<3} {mib:>5} {h.cls:<7} {rest}\n", style=style)
        else:
            owner = h.owner or "—"
            owner += " " * (6 - cells(owner))  # padded in cells: the COMMAND column stays put
            out += Text(f"{h.pid:<8} {gpus:<4} {mib:>7} {h.cls:<8} {owner} {command}\n", style=style)
    out.rstrip()
    return out
