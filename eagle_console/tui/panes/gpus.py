"""The GPUs pane: one row per GPU, then every GPU process with its class and owner.

A thread worker takes the GPU reading of every face (ops.read_gpus: the backend's sample, then the holders
scanned against it) once a second; the event loop only swaps two Text renderables, and only when they changed.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from rich.text import Text
from textual.containers import VerticalScroll
from textual.widgets import Static

from eagle_console.node.fdcache import LinkCache, ScanReuse
from eagle_console.tui.messages import PlanReloaded, ReadGpusNow, TabShown
from eagle_console.tui.panes._logview import Poller, QuietStatic
from eagle_console.tui.panes.gpu_rows import FROM_THIS_TERMINAL as FROM_THIS_TERMINAL
from eagle_console.tui.panes.gpu_rows import gpu_row as gpu_row
from eagle_console.tui.panes.gpu_rows import holder_command as holder_command
from eagle_console.tui.panes.gpu_rows import holders_table, short_name
from eagle_console.tui.theme import tstyle

if TYPE_CHECKING:
    from eagle_console.node.gpus import NodeSample
    from eagle_console.ops import GpuReader, GpuReading
    from eagle_console.tui.context import ConsoleContext

REFRESH_S = 1.0
FOREIGN_NOTE = "container: NVML pids are the host's"


def render_reading(reading: GpuReading, width: int | None = None,
                   steady: set[int] | None = None) -> tuple[Text, Text]:
    """`steady`: the GPUs whose unseen memory the reading before showed too (None: say every one)."""
    from eagle_console.node.gpus.unseen import unseen_notes  # node.gpus: at the first reading, not at startup

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
        self.reader: GpuReader | None = None
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
        if self.reader is not None:
            self.reader.close()

    # What the App tells it (tui.messages): read again at once, not at the next poll.
    def on_read_gpus_now(self, message: ReadGpusNow) -> None:
        self.reuse.clear()
        self.poller.poke()

    def on_tab_shown(self, message: TabShown) -> None:
        self.poller.poke()

    def on_plan_reloaded(self, message: PlanReloaded) -> None:
        self.reuse.clear()
        self.poller.poke()

    def _read(self) -> GpuReading:
        """Worker: one reading (a multi-node server's rank here is its step's, not `other`: ops.read_gpus)."""
        from eagle_console.ops import GpuReader, read_gpus

        if self.reader is None:
            self.reader = GpuReader(self.ctx.sim_dir, self.links, self.reuse)
        return read_gpus(self.reader, self.ctx.journal)

    def _show(self, reading: GpuReading) -> None:
        from eagle_console.node.gpus.unseen import unseen_by_gpu  # loaded by the reading (worker) already

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
