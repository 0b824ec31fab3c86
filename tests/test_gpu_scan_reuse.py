"""The GPUs pane's holder scan (a walk of every process's open files) runs when what it is made from
changed, not every second (issue 31): an idle node costs one backend sample a second, as nvitop does."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import time

import psutil
import pytest
from tuikit import until

from eagle_console.node.gpus import GpuProcessSample, GpuSample, NodeSample
from eagle_console.node.procs import Holder, HolderScan
from eagle_console.sim import gpustate


def sample(used: float = 1024.0, pids: tuple[int, ...] = (4242,), util: float = 3) -> NodeSample:
    gpus = [GpuSample(index=0, minor=0, memory_used_mib=used, utilization_pct=util,
                      processes=[GpuProcessSample(pid, used) for pid in pids])]
    return NodeSample(backend="sim", driver=None, error=None, gpus=gpus)


@pytest.fixture
def parent_and_child():
    """A shell that waits on a `sleep`: the sleep's parent is the shell until the shell is killed."""
    shell = subprocess.Popen(["bash", "-c", "sleep 60 & wait"], start_new_session=True)
    child = None
    deadline = time.monotonic() + 10
    while child is None and time.monotonic() < deadline:
        kids = psutil.Process(shell.pid).children()
        child = kids[0].pid if kids else None
        time.sleep(0.02)
    assert child is not None
    yield shell, child
    os.killpg(shell.pid, signal.SIGKILL)
    shell.wait()
    try:
        os.kill(child, signal.SIGKILL)
    except ProcessLookupError:
        pass


def test_a_scan_stands_while_nothing_changed_and_not_a_moment_longer(parent_and_child):
    from eagle_console.node.fdcache import ScanReuse

    shell, child = parent_and_child
    reuse = ScanReuse()
    scan = HolderScan([Holder(child, shell.pid, "op", "sleep 60", [0], 1024.0)], "local")
    reuse.put(sample(), 100, scan)  # 100: the journal's last event id when the tracked runs were read
    assert reuse.get(sample(util=97), 100) is scan  # busier, the same memory and processes: no new scan
    assert reuse.get(sample(used=2048.0), 100) is None  # memory moved
    assert reuse.get(sample(pids=(4242, 4343)), 100) is None  # a process came
    assert reuse.get(sample(), 101) is None  # a run started or ended
    assert reuse.get(sample(), 100) is scan
    os.kill(shell.pid, signal.SIGKILL)  # the holder's parent dies: it is an orphan now, seen at once
    shell.wait()
    deadline = time.monotonic() + 10
    while psutil.Process(child).ppid() == shell.pid and time.monotonic() < deadline:
        time.sleep(0.02)
    assert reuse.get(sample(), 100) is None
    reuse.put(sample(), 100, scan)
    reuse.clear()  # a kill or a plan reload
    assert reuse.get(sample(), 100) is None
    assert ScanReuse(full_s=0).get(sample(), 100) is None


def test_an_idle_gpus_pane_scans_the_processes_once_not_every_second(tmp_path, monkeypatch):
    """On an unchanged simulated node the pane samples every poll and walks /proc once."""
    from test_tui_panes_gpus import make_ctx
    from textual.app import App

    import eagle_console.node.reading as reading
    from eagle_console.tui.panes.gpus import GpuPane

    monkeypatch.delenv("EAGLE_CONSOLE_GPU_BACKEND", raising=False)
    sim = tmp_path / "sim"
    gpustate.create_node(sim)
    scans = []
    real = reading.scan_node  # the one reading of every face (node/reading.py) scans through it
    monkeypatch.setattr(reading, "scan_node", lambda *a, **k: scans.append(1) or real(*a, **k))
    ctx = make_ctx(tmp_path, sim)

    class PaneApp(App):
        def compose(self):
            yield GpuPane(ctx, refresh_s=0.05, id="gpus")

    app = PaneApp()

    async def main() -> None:
        async with app.run_test(size=(120, 40)) as pilot:
            pane = app.query_one(GpuPane)
            await until(pilot, lambda: pane.polls >= 6, what="six polls")
            assert len(scans) == 1, scans
            rows = str(pane.query_one("#gpu-rows").render())
            assert rows.count("RTX PRO 6000") == 8

    asyncio.run(main())
    ctx.journal.close()
