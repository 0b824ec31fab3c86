"""Server and NCCL panes on a service log the test writes from real SGLang and NCCL logs (tests/data)."""

from __future__ import annotations

import asyncio
import os

from enginekit import write_plan
from textual.app import App
from tuikit import until

from eagle_console.journal import Journal
from eagle_console.plan.loader import load_plan
from eagle_console.sparkline import sparkline
from eagle_console.tui.context import ConsoleContext
from eagle_console.tui.panes.nccl import NcclPane, gpu_busy_from
from eagle_console.tui.panes.server import ServerPane, server_line_style

DATA = os.path.join(os.path.dirname(__file__), "data")
PLAN = """
[[phase]]
id = "0"
title = "p"

[[phase.step]]
id = "0.1"
title = "prepare"
run = "true"

[[phase.step]]
id = "0.3"
title = "server"
service = true
run = "sleep 1000"
ready = { log = "fired up" }
"""


def data(name: str) -> list[str]:
    folder = "nccl" if name.startswith(("nccl", "pytorch", "ray")) else "sglang"
    with open(os.path.join(DATA, folder, name)) as f:
        return f.read().splitlines()


def append(path, lines):
    with open(path, "a") as f:
        f.write("".join(f"{s}\n" for s in lines))


class PanesApp(App):
    def __init__(self, ctx) -> None:
        super().__init__()
        self.ctx = ctx

    def compose(self):
        yield ServerPane(self.ctx)
        yield NcclPane(self.ctx)


def service_ctx(tmp_path, select: str | None = "0.1"):
    path = write_plan(tmp_path, PLAN)
    plan = load_plan(path)
    journal = Journal.for_plan(plan)
    log = tmp_path / "sglang.log"
    log.write_text("")
    journal.begin_run("0.3", command="python -m sglang.launch_server", log=str(log), service=True)
    return ConsoleContext(plan_path=path, plan=plan, journal=journal, selected_step_id=select), log


def test_server_pane_follows_startup_ready_decode_and_errors(tmp_path):
    # a non-service step is selected: the pane shows the latest service run's log
    ctx, log = service_ctx(tmp_path, select="0.1")
    app = PanesApp(ctx)

    async def main() -> None:
        async with app.run_test(size=(120, 40)) as pilot:
            pane = app.query_one(ServerPane)
            await until(pilot, lambda: pane.path == log, what="service log resolved")
            append(log, data("sglang4826_startup_tp0.txt"))
            await until(pilot, lambda: pane.summary and pane.summary["stages"], what="stages")
            head = str(pane.head.render())
            assert head.startswith("starting:") and "KV cache" in head
            append(log, data("kvcache50_ready.txt") + data("sglang11948_eagle3_decode_tp0.txt"))
            await until(pilot, lambda: pane.summary["ready"] and pane.summary["decode_samples"] >= 3, what="ready")
            head = str(pane.head.render())
            assert head.startswith("READY")
            last = pane.summary["decode"]
            assert f"decode {last['gen_throughput']:.1f} tok/s" in head and f"accept len {last['accept_len']:.2f}" in head
            assert any(ch in head for ch in "▁▂▃▄▅▆▇█")  # the history sparkline
            append(log, data("sglang4547_cuda_oom_traceback.txt"))
            await until(pilot, lambda: any(f["code"] == "CUDA_OOM" for f in pane.summary["findings"]), what="oom")
            assert "CUDA_OOM" in str(pane.head.render())
            oom = next(s for s in pane.shown_lines if "out of memory" in s)
            from eagle_console.tui.theme import rich_style

            # the theme's error colour (Textual's $error), not a fixed red
            assert server_line_style(oom) == rich_style("ec.error.bold") and server_line_style(oom).bold

    asyncio.run(main())


def test_nccl_pane_summary_matrix_env_findings_and_raw_lines(tmp_path):
    ctx, log = service_ctx(tmp_path, select="0.3")
    noise = ["[2025-10-22 10:27:56 TP0] Load weight begin. avail mem=78.00 GB"]
    append(log, noise + data("nccltests166_shm_net.txt") + data("pytorch130113_p2p_disabled.txt"))
    app = PanesApp(ctx)

    async def main() -> None:
        async with app.run_test(size=(120, 50)) as pilot:
            pane = app.query_one(NcclPane)
            await until(pilot, lambda: pane.summary and pane.summary["transports"]["SHM"], what="nccl summary")
            head = str(pane.head.render())
            codes = {f["code"] for f in pane.summary["findings"]}
            assert {"SHM_FALLBACK", "P2P_DISABLED"} <= codes
            assert "GPU pairs: 5 SHM, 1 NET" in head and "SHM_FALLBACK" in head  # pairs, the findings' unit
            assert "src\\dst" in head  # the rank x rank matrix
            assert all("NCCL" in s for s in pane.shown_lines) and "Load weight" not in "".join(pane.shown_lines)
            # a finished init plus the 8-rank log: Init COMPLETE n/ranks
            append(log, data("nccl629_init_complete_old.txt"))
            await until(pilot, lambda: pane.summary["ranks"] == 16, what="ranks")
            assert "Init COMPLETE 8/16" in str(pane.head.render())

    asyncio.run(main())


def test_sparkline_and_busy_rules():
    assert sparkline([1.0, 2.0, 3.0]) == "▁▅█"
    assert sparkline([None, None]) == ""
    assert sparkline([5.0, None, 1.0, 2.0, 3.0], width=3) == "▁▅█"  # the newest `width` values
    assert sparkline([4.0, 4.0]) == "▁▁"
    assert gpu_busy_from(None) is None


def test_one_sparkline_for_both_faces():
    """The Server pane and `server-log` had a copy each; the core's is the one both call."""
    import eagle_console.cli.server_cmds as cli
    import eagle_console.tui.panes.server as pane

    assert cli.sparkline is sparkline and pane.sparkline is sparkline


def test_the_nccl_pane_takes_gpu_load_from_the_shared_context_not_the_dom(tmp_path):
    """It looked the GPU pane up through app.screen_stack; the GPU pane now leaves its reading in ctx.gpus.
    Here there is no GPU pane at all: a busy reading in the context is what the hang check weighs."""
    from types import SimpleNamespace

    ctx, log = service_ctx(tmp_path, select="0.3")
    append(log, data("nccltests166_shm_net.txt"))
    gpu = SimpleNamespace(utilization_pct=97.0, name="NVIDIA GeForce RTX 4090")  # GpuSample's fields read
    ctx.gpus = SimpleNamespace(sample=SimpleNamespace(gpus=[gpu]))
    app = PanesApp(ctx)

    async def main() -> None:
        async with app.run_test(size=(120, 50)) as pilot:
            pane = app.query_one(NcclPane)
            await until(pilot, lambda: pane.summary is not None and pane.gpu_busy is True, what="busy from ctx")
            gpu.utilization_pct = 3.0
            await until(pilot, lambda: pane.gpu_busy is False, what="idle from ctx")
            # the card names reach the SHM verdict (NCCL's log names no card)
            await until(pilot, lambda: any("GeForce" in f["message"] for f in pane.summary["findings"]
                                           if f["code"] == "SHM_FALLBACK"), what="card class in SHM_FALLBACK")

    asyncio.run(main())


def test_the_server_pane_leaves_out_metrics_reads_and_counts_them(tmp_path):
    """Seen by hand in the demo: the Server pane was the console's own `"GET /metrics HTTP/1.1" 200 OK`
    lines, one every second or two (its Metrics readings; SGLang's uvicorn logs every request). The pane now
    leaves them out and says how many; other requests' access lines (a real log's POSTs) stay."""
    ctx, log = service_ctx(tmp_path, select="0.3")
    app = PanesApp(ctx)
    real = data("sglang22166_decode_comma_new.txt")  # POST access lines and decode logs, 2026's format
    reads = [f'[2026-04-05 20:02:5{i}] INFO:     127.0.0.1:{48700 + i} - "GET /metrics HTTP/1.1" 200 OK'
             for i in range(6)]
    mixed = [line for pair in zip(real, reads + [""] * len(real), strict=False) for line in pair if line]

    async def main() -> None:
        async with app.run_test(size=(120, 40)) as pilot:
            pane = app.query_one(ServerPane)
            await until(pilot, lambda: pane.path == log, what="service log resolved")
            append(log, mixed)
            await until(pilot, lambda: len(pane.shown_lines) >= len(real), what="lines shown")
            assert not [s for s in pane.shown_lines if "GET /metrics" in s]
            assert sum("POST /v1/chat/completions" in s for s in pane.shown_lines) == \
                sum("POST /v1/chat/completions" in s for s in real) > 0
            assert " · 6 /metrics hidden · " in str(pane.status.render())
            append(log, reads[:2])  # a poll that brings nothing but reads still counts them
            await until(pilot, lambda: " · 8 /metrics hidden · " in str(pane.status.render()),
                        what="8 hidden")

    asyncio.run(main())
