"""The GPUs pane in a tiny App on a simulated node: GPU rows, holders with orphans flagged, no driver."""

from __future__ import annotations

import asyncio
import os
import signal
from pathlib import Path

import psutil
import pytest
from enginekit import write_plan
from tuikit import until

from eagle_console.journal import Journal
from eagle_console.plan.loader import load_plan
from eagle_console.sim import gpustate
from eagle_console.sim.orphans import leave_orphans
from eagle_console.tui.context import ConsoleContext

pytest.importorskip("textual")
from textual.app import App  # noqa: E402

from eagle_console.tui.panes.gpus import GpuPane  # noqa: E402

PLAN = '[[phase]]\nid = "0"\ntitle = "p"\n\n[[phase.step]]\nid = "0.1"\ntitle = "echo"\nrun = "echo hi"\n'


def stop_pids(pids: list[int]) -> None:
    for pid in pids:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    psutil.wait_procs([p for p in map(_proc, pids) if p], timeout=5)


def _proc(pid: int) -> psutil.Process | None:
    try:
        return psutil.Process(pid)
    except psutil.NoSuchProcess:
        return None


def make_ctx(tmp_path: Path, sim: Path | None) -> ConsoleContext:
    path = write_plan(tmp_path, PLAN)
    plan = load_plan(path)
    return ConsoleContext(plan_path=path, plan=plan, journal=Journal.for_plan(plan), sim_dir=sim)


class PaneApp(App):
    def __init__(self, ctx: ConsoleContext) -> None:
        super().__init__()
        self.ctx = ctx

    def compose(self):
        yield GpuPane(self.ctx, id="gpus")


@pytest.fixture
def sim_orphans(tmp_path, monkeypatch, request):
    monkeypatch.delenv("EAGLE_CONSOLE_GPU_BACKEND", raising=False)
    sim = tmp_path / "sim"
    gpustate.create_node(sim)
    pids = leave_orphans(sim, 2)
    request.addfinalizer(lambda: stop_pids(pids))
    return sim, pids


def test_gpu_rows_and_orphans_on_the_sim_node(tmp_path, sim_orphans):
    sim, pids = sim_orphans
    app = PaneApp(make_ctx(tmp_path, sim))

    async def main() -> None:
        async with app.run_test(size=(120, 40)) as pilot:
            pane = app.query_one(GpuPane)
            await until(pilot, lambda: pane.last is not None, what="first GPU reading")
            rows = str(pane.query_one("#gpu-rows").render())
            procs = str(pane.query_one("#gpu-procs").render())
            assert rows.count("RTX PRO 6000") == 8
            assert "Gen5x16" in rows and "6.0/" in rows  # 6120 MiB held on GPUs 3 and 5
            for pid in pids:
                line = next(ln for ln in procs.splitlines() if ln.startswith(str(pid)))
                assert "orphan" in line and "6120" in line
            # memory freed shows on the next refresh, without touching the pane
            stop_pids(pids)
            await until(pilot, lambda: all(str(p) not in str(pane.query_one("#gpu-procs").render())
                                           for p in pids), what="holders gone")
            await until(pilot, lambda: all(g.memory_used_mib == 0 for g in pane.last.sample.gpus),
                        what="memory freed (after the sim's release lag)")

    asyncio.run(main())


def test_no_driver_is_one_line_and_the_pane_keeps_polling(tmp_path, monkeypatch):
    monkeypatch.setenv("EAGLE_CONSOLE_GPU_BACKEND", "none")
    app = PaneApp(make_ctx(tmp_path, None))

    async def main() -> None:
        async with app.run_test(size=(80, 24)) as pilot:
            pane = app.query_one(GpuPane)
            await until(pilot, lambda: pane.polls >= 2, what="two polls")
            rows = str(pane.query_one("#gpu-rows").render())
            assert rows.startswith("No GPUs:") and "none" in rows and "\n" not in rows
            assert pane.query_one("#gpu-rows").has_class("-message")  # the reason wraps, GPU rows do not

    asyncio.run(main())


def test_a_gpu_row_fits_its_width_and_keeps_what_matters_longest():
    from eagle_console.node.gpus import GpuSample
    from eagle_console.tui.panes.gpus import gpu_row

    g = GpuSample(index=7, name="NVIDIA RTX PRO 6000 Blackwell Workstation Edition", memory_total_mib=97887,
                  memory_used_mib=82000, utilization_pct=97, temperature_c=71, power_w=580, power_limit_w=600,
                  pcie_gen=5, pcie_width=16)
    assert gpu_row(g).plain.startswith("7 RTX PRO 6000") and "Gen5x16" in gpu_row(g).plain
    for width in range(23, 100):
        row = gpu_row(g, width).plain
        assert len(row) <= width, (width, row)
        assert row.startswith("7 ") and "80.1/95.6" in row and "97%" in row  # index, memory, utilisation stay
    assert "RTX" not in gpu_row(g, 70).plain and "Gen5x16" in gpu_row(g, 70).plain  # the name goes first
    assert "71°C" in gpu_row(g, 30).plain and "580" not in gpu_row(g, 30).plain
    h200 = GpuSample(index=0, name="NVIDIA H200", memory_total_mib=143771, memory_used_mib=9400, utilization_pct=0)
    assert gpu_row(h200, 30).plain.startswith("0 █░")  # 6.5 % of six cells rounds to none: one shows it is held


def test_a_holder_line_names_the_program_and_puts_an_orphans_reason_first():
    from eagle_console.node.procs import Holder
    from eagle_console.tui.panes.gpus import holder_command, holders_table

    cmd = "/home/op/envs/sglang/.venv/bin/python3 -m sglang.launch_server --model-path /data/models/Kimi-K2.5 --tp 8"
    orphan = Holder(4242, 1, "op", cmd, [0, 1], 80697.0, cls="orphan", reason="ppid 1")
    other = Holder(77, 3000, "op", cmd, [2], 1024.0)
    assert holder_command(orphan).startswith("ppid 1 · python3 -m sglang.launch_server")
    assert holder_command(other).startswith("python3 -m sglang.launch_server") and "/home" not in holder_command(other)
    lines = holders_table([orphan, other]).plain.splitlines()
    assert lines[1].startswith("4242") and "orphan" in lines[1] and "ppid 1 · python3" in lines[1]


def test_container_node_says_so_in_one_line_and_unknown_gpus_show_a_question_mark(tmp_path, monkeypatch):
    """NVML in a container reports host pids: the pane says so, and a holder whose GPU cannot be told
    (CUDA opens every device file) shows `?`, not all eight GPUs."""
    monkeypatch.delenv("EAGLE_CONSOLE_GPU_BACKEND", raising=False)
    sim = tmp_path / "sim"
    gpustate.create_node(sim, container=True)
    pids = leave_orphans(sim, 2, gpus=[3, 5])
    app = PaneApp(make_ctx(tmp_path, sim))

    async def main() -> None:
        async with app.run_test(size=(140, 40)) as pilot:
            pane = app.query_one(GpuPane)
            await until(pilot, lambda: pane.last is not None, what="first reading")
            rows = str(pane.query_one("#gpu-rows").render())
            assert rows.count("container: NVML pids are the host's") == 1
            procs = str(pane.query_one("#gpu-procs").render()).splitlines()
            for pid in pids:
                (line,) = [ln for ln in procs if ln.startswith(str(pid))]
                assert line.split()[1] == "?" and "orphan" in line

    try:
        asyncio.run(main())
    finally:
        stop_pids(pids)
