"""Memory held by processes the console cannot see (issue 26): inside an LXC container or a PID namespace
NVML reports memory in use and lists no process for it. The GPUs pane, `gpus`, `orphans`, K and `--json`
say per GPU how much is held out of sight and where to look, instead of "no GPU holders"."""

from __future__ import annotations

import asyncio
import json
import subprocess

import clikit
import pytest
from test_tui_panes_gpus import PaneApp, make_ctx, stop_pids, until

from eagle_console.node.gpus import GpuProcessSample, GpuSample, NodeSample
from eagle_console.node.gpus.unseen import WHERE_TO_LOOK, unattributed_mib, unseen_by_gpu, unseen_notes
from eagle_console.sim import gpustate
from eagle_console.sim.orphans import leave_orphans

MIB = 1024 * 1024
HIDDEN_GPU, HIDDEN_MIB = 3, 17386.0
NOTE = "GPU 3: 17,386 MiB in use that no process here accounts for (another container or the host)"


@pytest.fixture
def sim(tmp_path, monkeypatch):
    monkeypatch.delenv("EAGLE_CONSOLE_GPU_BACKEND", raising=False)
    d = tmp_path / "sim"
    gpustate.create_node(d)
    gpustate.hold_outside(d, {HIDDEN_GPU: HIDDEN_MIB})
    return d


def cli(*args: str) -> subprocess.CompletedProcess:
    return clikit.run(args, timeout=60)


def test_an_idle_h200_and_one_with_a_listed_process_have_nothing_out_of_sight():
    """Real readings (shared fixtures h200/nvml.txt and orphan.txt, driver 580.159.04): an idle H200 uses
    644939776 bytes with no process listed (the driver's own), and 7736262656 with one process listed at
    6754 MiB. Neither is memory held by someone else."""
    idle = GpuSample(index=0, memory_used_mib=644939776 / MIB, processes=[])
    busy = GpuSample(index=0, memory_used_mib=7736262656 / MIB, processes=[GpuProcessSample(462, 6754.0)])
    assert unattributed_mib(idle) == 615.1 and unattributed_mib(busy) == 623.9
    assert unseen_by_gpu(NodeSample("nvml", "580.159.04", None, [idle, busy])) == {}
    # a process whose share NVML does not give (N/A in some containers): nothing can be said
    unknown = GpuSample(index=1, memory_used_mib=20000.0, processes=[GpuProcessSample(7, None)])
    assert unattributed_mib(unknown) is None


def test_gpus_json_and_text_say_what_is_held_out_of_sight(sim):
    out = cli("gpus", "--json", "--sim", str(sim))
    assert out.returncode == 0, out.stderr
    gpus = json.loads(out.stdout)["gpus"]
    assert gpus[HIDDEN_GPU]["processes"] == [] and gpus[HIDDEN_GPU]["memory_used_mib"] == HIDDEN_MIB
    assert [g["unattributed_mib"] for g in gpus] == [0.0, 0.0, 0.0, HIDDEN_MIB, 0.0, 0.0, 0.0, 0.0]
    text = cli("gpus", "--sim", str(sim)).stdout
    assert NOTE in text and WHERE_TO_LOOK in text


def test_orphans_says_no_holder_visible_rather_than_none(sim, request):
    out = cli("orphans", "--sim", str(sim))
    assert out.returncode == 0, out.stderr
    assert "no GPU holders" not in out.stdout
    assert out.stdout.splitlines() == ["no GPU holder visible here, yet:", NOTE, WHERE_TO_LOOK]
    doc = json.loads(cli("orphans", "--json", "--sim", str(sim)).stdout)
    assert doc["holders"] == []
    assert {g["index"]: g["unattributed_mib"] for g in doc["gpus"]}[HIDDEN_GPU] == HIDDEN_MIB
    # with a holder listed on the same GPU, only the rest is out of sight
    pids = leave_orphans(sim, 1, mib=6120.0, gpus=[HIDDEN_GPU])
    request.addfinalizer(lambda: stop_pids(pids))
    doc = json.loads(cli("orphans", "--json", "--sim", str(sim)).stdout)
    assert [h["pid"] for h in doc["holders"]] == pids
    assert {g["index"]: g["unattributed_mib"] for g in doc["gpus"]}[HIDDEN_GPU] == HIDDEN_MIB


def test_the_gpus_pane_and_k_show_the_memory_held_out_of_sight(tmp_path, sim):
    from eagle_console.tui.screens.kill import KillScreen

    ctx = make_ctx(tmp_path, sim)
    app = PaneApp(ctx)

    async def main() -> None:
        async with app.run_test(size=(130, 40)) as pilot:
            rows = app.query_one("#gpu-rows")
            await until(pilot, lambda: NOTE in str(rows.render()), what="the note in the GPUs pane")
            assert WHERE_TO_LOOK in str(rows.render())
            screen = KillScreen(ctx)
            app.push_screen(screen)
            await until(pilot, lambda: screen.state == "done" or screen.state == "choosing", what="scan")
            summary = str(screen.query_one("#kill-summary").render())
            assert "No GPU holders: nothing to kill." in summary and NOTE in summary, summary

    asyncio.run(main())


def test_the_note_goes_when_the_memory_is_given_back(sim):
    gpustate.hold_outside(sim, {})
    from eagle_console.node.gpus import open_backend

    assert unseen_notes(open_backend(sim).sample()) == []
