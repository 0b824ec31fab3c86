#!/usr/bin/env bash
# On a real GPU node: the console's first screen with the NVML backend while a torch worker holds 8 GiB
# (as text, the way tests/test_tui_snapshots.py reads a screen), then benchmarks/startup.py there.
# Usage (repo root; Textual importable): OUT=/some/dir bash benchmarks/h200_console.sh
. "$(dirname "$0")/_h200_env.sh"
$py -c 'import textual, pynvml; print("textual", textual.__version__, "pynvml ok")' || exit 1
$py /tmp/holder.py 8 > /tmp/holder.out 2>&1 &
HOLDER=$!
wait_allocated /tmp/holder.out
cat /tmp/holder.out
cat > /tmp/screen.py <<'PY'
import asyncio, shutil, sys, tempfile
from pathlib import Path
sys.path.insert(0, "tests")
from tuikit import screen_text, until
from eagle_console.journal import Journal
from eagle_console.plan.loader import load_plan
from eagle_console.tui.app import make_app

async def main(size):
    tmp = Path(tempfile.mkdtemp())
    shutil.copy("plans/phase0-aqmedai-probe.toml", tmp / "plan.toml")
    plan = load_plan(tmp / "plan.toml")
    app = make_app(plan, Journal.for_plan(plan))
    async with app.run_test(size=size) as pilot:
        await until(pilot, lambda: "GPUs · " in screen_text(app) or "No GPUs" in screen_text(app), what="GPU sample")
        await pilot.pause(2.5)  # the holder scan's next round
        print(f"--- console, NVML backend, {size[0]}x{size[1]} ---")
        print(screen_text(app))

for size in ((120, 40), (80, 24)):
    asyncio.run(main(size))
PY
EAGLE_CONSOLE_GPU_BACKEND=nvml $py /tmp/screen.py 2>&1 | tee "$OUT/console_nvml.txt"
kill "$HOLDER"; wait "$HOLDER" 2>/dev/null
echo "== benchmarks/startup.py (NVML backend)"; EAGLE_CONSOLE_GPU_BACKEND=nvml $py benchmarks/startup.py --reps 25 2>&1 | tee "$OUT/startup.txt"
