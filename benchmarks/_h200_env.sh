# Sourced by the benchmarks/h200_*.sh scripts (run from the repo root on a real GPU node): the repo on
# PYTHONPATH, $OUT and $py, /tmp/holder.py (a torch worker holding N GiB of GPU memory until killed) and
# wait_allocated FILE (until that worker says it holds the memory, at most 2 minutes).
export PYTHONPATH=.${PYTHONPATH:+:$PYTHONPATH} PYTHONUNBUFFERED=1
OUT=${OUT:-/tmp/h200-out}; mkdir -p "$OUT"
py=python3
cat > /tmp/holder.py <<'PY'
import sys, time, torch
x = torch.ones(int(float(sys.argv[1]) * 2**30), dtype=torch.uint8, device="cuda")
torch.cuda.synchronize(); print("allocated", x.numel() >> 30, "GiB", flush=True); time.sleep(900)
PY
wait_allocated() { for _ in $(seq 240); do grep -q allocated "$1" && break; sleep 0.5; done; }
