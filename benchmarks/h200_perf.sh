#!/usr/bin/env bash
# Issue 31 on a real GPU node, every row before and after in one run: first paint (startup.py), idle in a
# pty against nvitop with real NVML (peer_idle.py), a 100k lines/s follow against tail -f (log_ingest.py),
# idle with 50,000 journal events against 100 (idle_journal.py). Each writes its output to $OUT as it goes.
# Usage (repo root; Textual and nvitop importable, nvitop on PATH), all four or the ones named:
#   OUT=/some/dir BEFORE=/path/to/older/checkout bash benchmarks/h200_perf.sh [startup peer_idle log_ingest idle_journal]
. "$(dirname "$0")/_h200_env.sh"
before=${BEFORE:+--before $BEFORE}
wanted=" ${*:-startup peer_idle log_ingest idle_journal} "
step() {  # step NAME SECONDS COMMAND...: one benchmark, cut at SECONDS, its output kept whatever happens
  local name=$1 limit=$2; shift 2
  [[ $wanted == *" $name "* ]] || return 0
  echo "== $name ($(date +%T))"
  timeout -k 5 "$limit" "$@" > "$OUT/$name.txt" 2>&1
  echo "rc=$?" >> "$OUT/$name.txt"
  cat "$OUT/$name.txt"
}
{
  echo "host: $(nproc) cores · $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | head -1)"
  $py -c 'import sys, textual, rich, pynvml; print("python", sys.version.split()[0], "· textual", textual.__version__)'
  command -v nvitop >/dev/null && nvitop --version
  echo "processes: $(ls /proc | grep -c '^[0-9]')"
} 2>&1 | tee "$OUT/host.txt"
export EAGLE_CONSOLE_GPU_BACKEND=nvml
step startup 120 $py benchmarks/startup.py --reps 21 $before
step peer_idle 75 $py benchmarks/peer_idle.py --seconds 20 --warmup 5 $before --json "$OUT/peer_idle.json"
unset EAGLE_CONSOLE_GPU_BACKEND  # log_ingest follows a log with no GPU pane; idle_journal sets its own (sim)
step log_ingest 180 $py benchmarks/log_ingest.py --seconds 20 $before
step idle_journal 380 $py benchmarks/idle_journal.py --seconds 20 $before
