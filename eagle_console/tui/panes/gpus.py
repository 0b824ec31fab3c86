"""The GPUs pane: one row per GPU, then every GPU process with its class and owner.

A thread worker samples the backend (NVML / sim / none) and scans /proc for holders once a second;
the event loop only swaps two Text renderables, and only when they changed.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, NamedTuple

from rich.text import Text
from textual.containers import VerticalScroll
from textual.widgets import Static

from eagle_console.node.fdcache import LinkCache, ScanReuse
from eagle_console.node.gpus.unseen import unseen_by_gpu, unseen_notes
from eagle_console.tui.cells import cells, cut
from eagle_console.tui.messages import PlanReloaded, ReadGpusNow
from eagle_console.tui.panes._logview import Poller, QuietStatic
from eagle_console.tui.theme import tstyle

if TYPE_CHECKING:
    from eagle_console.node.gpus import GpuBackend, GpuSample, NodeSample
    from eagle_console.node.procs import Holder
    from eagle_console.tui.context import ConsoleContext

REFRESH_S = 1.0
BAR = 12
MIN_BAR = 5  # a narrower memory bar says nothing
NA = "N/A"


FOREIGN_NOTE = "container: NVML pids are the host's"


class GpuReading(NamedTuple):
    sample: NodeSample
    holders: list[Holder]
    pid_namespace: str = "local"  # "foreign": NVML reports another namespace's pids (LXC, Docker)


def read_gpus(backend: GpuBackend, ctx: ConsoleContext, links: LinkCache | None = None,
              reuse: ScanReuse | None = None) -> GpuReading:
    """One blocking reading: the backend's sample plus the classified holders (runs in a worker); with
    `reuse`, the last holder scan while nothing it was made from changed (node/fdcache.ScanReuse)."""
    from eagle_console.node.procs import scan_node
    from eagle_console.ops.rank_sessions import tracked_here

    sample = backend.sample()
    # The tracked runs come from the journal: its last event id stands for them (with 12,500 runs in it,
    # reading them every second was most of what a long history cost an idle console).
    journal_at = ctx.journal.last_event_id() if reuse is not None else None
    scan = reuse.get(sample, journal_at) if reuse is not None else None
    if scan is None:  # tracked_here: a multi-node server's rank here is its step's, not `other`
        scan = scan_node(sample, tracked_here(ctx.journal), device_prefix=backend.device_prefix, links=links)
        if reuse is not None:
            reuse.put(sample, journal_at, scan)
    return GpuReading(sample, scan.holders, scan.pid_namespace)


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


def render_reading(reading: GpuReading, width: int | None = None,
                   steady: set[int] | None = None) -> tuple[Text, Text]:
    """`steady`: the GPUs whose unseen memory the reading before showed too (None: say every one)."""
    sample = reading.sample
    if sample.backend == "none" or (sample.error and not sample.gpus):
        head = Text(f"No GPUs: {sample.error or 'no NVIDIA driver'}", style=tstyle("ec.warn"))
    else:
        head = Text("\n", no_wrap=True, overflow="ellipsis").join(gpu_row(g, width) for g in sample.gpus)
        if sample.error:
            head += Text(f"\n{sample.error}", style=tstyle("ec.warn"))
        if reading.pid_namespace == "foreign":
            head += Text(f"\n{FOREIGN_NOTE}", style=tstyle("ec.warn"))
        for note in unseen_notes(sample, steady):  # memory in use that no holder row below accounts for
            head += Text(f"\n{note}", style=tstyle("ec.warn"))
    return head, holders_table(reading.holders, width)


def models_title(sample: NodeSample) -> str:
    """`GPUs · 8x RTX PRO 6000` when every GPU is the same model (the rows may then leave the name out)."""
    names = {short_name(g.name) for g in sample.gpus}
    if len(names) == 1 and sample.gpus:
        return f"GPUs · {len(sample.gpus)}x {names.pop()}"
    return "GPUs"


class GpuPane(VerticalScroll):
    """`GpuPane(ctx)`: refreshes itself every second off the event loop; `last` is the latest reading."""

    BORDER_TITLE = "GPUs"
    DEFAULT_CSS = """
    GpuPane { height: auto; }
    GpuPane > #gpu-rows { height: auto; text-wrap: nowrap; text-overflow: ellipsis; }
    GpuPane > #gpu-rows.-message { text-wrap: wrap; }  /* why there are no GPUs: read it whole */
    GpuPane > #gpu-procs { height: auto; text-wrap: nowrap; text-overflow: ellipsis; }
    """

    def __init__(self, ctx: ConsoleContext, *, refresh_s: float = REFRESH_S, **kwargs) -> None:
        super().__init__(**kwargs)
        self.ctx = ctx
        self.refresh_s = refresh_s
        self.backend: GpuBackend | None = None
        self.links = LinkCache()  # the once-a-second scan rereads only new fds (node/fdcache.py)
        self.reuse = ScanReuse()  # and runs only when the sample, the tracked runs or a holder's parent changed
        self.last: GpuReading | None = None
        self.steady_unseen: set[int] = set()  # GPUs with memory out of sight in this reading and the one before
        self._unseen_before: set[int] = set()
        self.polls = 0
        self.poller = Poller(self, refresh_s, self._read, self._show, self._failed, name="gpu-poll")

    def compose(self):
        yield QuietStatic("reading GPUs…", id="gpu-rows")
        yield QuietStatic("", id="gpu-procs")
        if self.ctx.plan.cluster is not None:  # Ray only for a plan that names a cluster
            from eagle_console.tui.panes.gpu_nodes import NodeSections

            yield NodeSections(self.ctx, id="gpu-nodes")

    def on_mount(self) -> None:
        self.poller.start()

    def on_unmount(self) -> None:
        self.poller.stop()
        if self.backend is not None:
            self.backend.close()

    # What the App tells it (tui.messages): read again at once, not at the next poll.
    def on_read_gpus_now(self, message: ReadGpusNow) -> None:
        self.reuse.clear()
        self.poller.poke()

    def on_plan_reloaded(self, message: PlanReloaded) -> None:
        self.reuse.clear()
        self.poller.poke()

    def _read(self) -> GpuReading:
        if self.backend is None:
            from eagle_console.node.gpus import open_backend

            self.backend = open_backend(self.ctx.sim_dir)
        return read_gpus(self.backend, self.ctx, self.links, self.reuse)

    def _show(self, reading: GpuReading) -> None:
        # A killed process leaves NVML's lists before its memory leaves the total (H200, driver 580.159.04):
        # for a reading or two that memory is "in use by no process". Only what two readings in a row show
        # out of sight is said, so a kill does not flash a false note.
        now = set(unseen_by_gpu(reading.sample))
        self.steady_unseen, self._unseen_before = now & self._unseen_before, now
        self.last = self.ctx.gpus = reading  # the NCCL pane weighs its hang check with it
        self.polls += 1
        self._draw()

    def on_resize(self) -> None:
        if self.last is not None:
            self._draw()

    def _draw(self) -> None:
        assert self.last is not None
        width = self.scrollable_content_region.width or None
        if width is not None and not self.show_vertical_scrollbar:  # the holders may bring one in
            width -= self.styles.scrollbar_size_vertical
        head, procs = render_reading(self.last, width, self.steady_unseen)
        rows = self.query_one("#gpu-rows", Static)  # QuietStatic: an idle node repaints nothing
        rows.update(head)
        rows.set_class(not self.last.sample.gpus, "-message")
        self.query_one("#gpu-procs", Static).update(procs)
        title = models_title(self.last.sample)
        if title != self.border_title:  # assigning even the same title repaints the pane
            self.border_title = title

    def _failed(self, exc: BaseException) -> None:
        self.query_one("#gpu-rows", Static).update(Text(f"GPU reading failed: {exc}", style=tstyle("ec.error")))
