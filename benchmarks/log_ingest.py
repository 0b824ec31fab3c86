"""Log ingest under a flood: a writer appends ~100k lines/s to a server log while (a) `tail -f` and
(b) the ServerPane in a headless App follow the same file in the same run.

Reports lines/s delivered by each (and the ratio), key-press-to-repaint latency (press `f` → the pane's
status line changes, measured through Pilot) during the flood, and RSS after 2M lines (the buffer is
bounded, so it must not grow with the line count).

Each console runs in a process of its own after the `tail -f` reference; `--before DIR` adds an older
checkout's console to the same run. Target (issue 31): ≥ 0.9x tail -f, done < 1 s after it.

    .venv/bin/python benchmarks/log_ingest.py [--seconds 20] [--rate 100000] [--before OLD_CHECKOUT]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

LINE = ("[2026-01-05 10:27:57 TP0] Decode batch. #running-req: 1, #token: 186, token usage: 0.00, accept len: 1.95, "
        "accept rate: 0.49, cuda graph: True, gen throughput (token/s): 178.86, #queue-req: 0, seq {:09d}\n")


def writer(path: Path, seconds: float, rate: int) -> None:
    """Append `rate` lines/s in 100 slices a second, for `seconds`."""
    per_slice = rate // 100
    n = 0
    start = time.monotonic()
    with open(path, "a", buffering=1 << 20) as f:
        while (elapsed := time.monotonic() - start) < seconds:
            due = int(elapsed * rate) + per_slice
            f.write("".join(LINE.format(i) for i in range(n, due)))
            f.flush()
            n = due
            time.sleep(0.01)
    print(n, flush=True)


async def console(path: Path, ctx, seconds: float) -> dict:
    import psutil
    from textual.app import App

    from eagle_console.tui.panes.server import ServerPane

    class Bench(App):
        def compose(self):
            yield ServerPane(ctx)

    app = Bench()
    latencies: list[float] = []
    async with app.run_test(size=(120, 40)) as pilot:
        pane = app.query_one(ServerPane)
        view = getattr(pane, "view", pane)  # the pane is its LogView now; an older tree's pane holds one
        while pane.path != path:
            await pilot.pause(0.05)
        start = time.monotonic()
        w = subprocess.Popen([sys.executable, __file__, "--writer", str(path), "--seconds", str(seconds),
                              "--rate", str(ARGS.rate)], stdout=subprocess.PIPE, text=True)
        first = view.received
        while w.poll() is None:
            await pilot.pause(0.5)
            before = str(view.status.render())
            t0 = time.perf_counter()
            # the App maps `f` to the focused pane's toggle_follow; this test App has no keymap, so call it
            pane.toggle_follow()
            while str(view.status.render()) == before:
                await pilot.pause(0)
            await pilot.pause(0)  # one repaint
            latencies.append(time.perf_counter() - t0)
        written = int(w.stdout.read().strip())
        while view.received - first < written and time.monotonic() - start < seconds + 30:
            await pilot.pause(0.05)
        elapsed = time.monotonic() - start
        got = view.received - first
        rss = psutil.Process().memory_info().rss
        buffered = len(view.buffer)
    return {"written": written, "received": got, "elapsed": elapsed, "latencies": latencies, "rss": rss,
            "buffered": buffered}


def tail_reference(path: Path, seconds: float) -> dict:
    out = path.with_suffix(".tail")
    with open(out, "w") as f:
        tail = subprocess.Popen(["tail", "-n", "0", "-f", str(path)], stdout=f)
        time.sleep(0.3)
        start = time.monotonic()
        w = subprocess.run([sys.executable, __file__, "--writer", str(path), "--seconds", str(seconds),
                            "--rate", str(ARGS.rate)], capture_output=True, text=True)
        written = int(w.stdout.strip())
        deadline = time.monotonic() + 30
        got = 0
        while time.monotonic() < deadline:
            f.flush()
            got = sum(1 for _ in open(out, "rb"))
            if got >= written:
                break
            time.sleep(0.1)
        elapsed = time.monotonic() - start
        tail.terminate()
        tail.wait()
    return {"written": written, "received": got, "elapsed": elapsed}


def child_console(folder: Path) -> None:
    """The console half in a process of its own (this checkout's code, or --before's): prints its figures."""
    import psutil

    from eagle_console.journal import Journal
    from eagle_console.plan.loader import load_plan
    from eagle_console.tui.context import ConsoleContext

    plan_path = folder / "plan.toml"
    plan = load_plan(plan_path)
    journal = Journal.for_plan(plan)
    log = folder / f"sglang-{time.monotonic_ns()}.log"
    log.write_text("")
    journal.begin_run("0.3", command="sglang", log=str(log), service=True, force=True)
    ctx = ConsoleContext(plan_path=plan_path, plan=plan, journal=journal, selected_step_id="0.3")
    rss0 = psutil.Process().memory_info().rss
    con = asyncio.run(console(log, ctx, ARGS.seconds))
    print(json.dumps({**con, "rss0": rss0}))


def main() -> int:
    folder = Path(tempfile.mkdtemp())
    plan_path = folder / "plan.toml"
    plan_path.write_text('[plan]\nid = "b"\ntitle = "b"\n\n[[phase]]\nid = "0"\ntitle = "p"\n\n[[phase.step]]\n'
                         'id = "0.3"\ntitle = "server"\nservice = true\nrun = "true"\nready = { log = "ready" }\n')
    ref_log = folder / "ref.log"
    ref_log.write_text("")
    ref = tail_reference(ref_log, ARGS.seconds)
    ref_rate = ref["received"] / ref["elapsed"]
    print(f"writer: {ARGS.rate} lines/s for {ARGS.seconds:g}s")
    print(f"tail -f : {ref['received']}/{ref['written']} lines in {ref['elapsed']:.1f}s = {ref_rate:,.0f} lines/s")
    trees = {"console": None, "console (before)": ARGS.before.resolve()} if ARGS.before else {"console": None}
    for label, tree in trees.items():  # each in its own process, right after the reference, in this run
        env = dict(os.environ)
        if tree is not None:  # the older code first on sys.path
            env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(tree), env.get("PYTHONPATH")]))
        # each its own copy of the plan, so its own journal: one version's may be of a schema the other refuses
        own = folder / ("now" if tree is None else "before")
        own.mkdir()
        shutil.copy(plan_path, own / "plan.toml")
        r = subprocess.run([sys.executable, __file__, "--child-console", str(own), "--seconds", str(ARGS.seconds),
                            "--rate", str(ARGS.rate)], capture_output=True, text=True, env=env,
                           cwd=tree or Path(__file__).resolve().parent.parent)
        if r.returncode != 0:
            print(r.stderr[-3000:], file=sys.stderr)
            return 1
        con = json.loads(r.stdout.strip().splitlines()[-1])
        con_rate = con["received"] / con["elapsed"]
        lag = con["elapsed"] - ref["elapsed"]
        lat = sorted(con["latencies"])
        print(f"{label} : {con['received']}/{con['written']} lines in {con['elapsed']:.1f}s = {con_rate:,.0f} lines/s "
              f"(ratio to tail -f {con_rate / ref_rate:.2f}; done {lag:+.1f}s after tail)")
        if lat:
            print(f"  toggle_follow→repaint during the flood: median {statistics.median(lat) * 1000:.0f} ms, "
                  f"max {lat[-1] * 1000:.0f} ms over {len(lat)} presses")
        print(f"  memory: RSS {con['rss'] / 2**20:.0f} MiB after {con['received']:,} lines "
              f"(before the App {con['rss0'] / 2**20:.0f} MiB), {con['buffered']} lines buffered")
    return 0


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--seconds", type=float, default=20.0)
    ap.add_argument("--rate", type=int, default=100_000)
    ap.add_argument("--writer", type=Path)
    ap.add_argument("--child-console", type=Path)
    ap.add_argument("--before", type=Path, default=None,
                    help="an older checkout: its console follows the same flood in the same run (before/after)")
    ARGS = ap.parse_args()
    if ARGS.writer:
        writer(ARGS.writer, ARGS.seconds, ARGS.rate)
        sys.exit(0)
    if ARGS.child_console:
        child_console(ARGS.child_console)
        sys.exit(0)
    sys.exit(main())
