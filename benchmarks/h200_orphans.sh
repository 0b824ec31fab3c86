#!/usr/bin/env bash
# On a real GPU node: a torch worker holding 8 GiB, its parent SIGKILLed -> the worker is an orphan;
# `orphans --kill --yes` frees it. Then the NVML-vs-nvidia-smi and holder-scan benchmarks.
# Usage (repo root): OUT=/some/dir bash benchmarks/h200_orphans.sh
. "$(dirname "$0")/_h200_env.sh"
$py -c 'import psutil, pynvml; print("psutil", psutil.__version__, "pynvml ok")' || exit 1
cat > /tmp/parent.py <<'PY'
import subprocess, sys, time
p = subprocess.Popen([sys.executable, "/tmp/holder.py", "8"]); print(p.pid, flush=True); time.sleep(900)
PY
$py /tmp/parent.py > /tmp/parent.out 2>&1 &
PARENT=$!
wait_allocated /tmp/parent.out
CHILD=$(head -1 /tmp/parent.out)
echo "== parent $PARENT child $CHILD"; cat /tmp/parent.out
ps -o pid,ppid,sid,stat,cmd -p "$PARENT,$CHILD"
echo "== gpus --json (parent alive)"
$py -m eagle_console gpus --json | tee "$OUT/gpus_before.json"
kill -9 "$PARENT"; wait "$PARENT" 2>/dev/null; sleep 0.5
echo "== after SIGKILL of parent"; ps -o pid,ppid,sid,stat,cmd -p "$CHILD"
echo "== orphans --json"
$py -m eagle_console orphans --json | tee "$OUT/orphans.json"
echo "== orphans --kill --yes --grace 10s"
$py -m eagle_console orphans --kill --yes --grace 10s 2>&1 | tee "$OUT/kill.txt"; echo "rc=${PIPESTATUS[0]}"
echo "== nvidia-smi after"; nvidia-smi | tee "$OUT/smi_after.txt"
nvidia-smi --query-compute-apps=pid,used_memory --format=csv
ps -o pid,stat,cmd -p "$CHILD" || echo "child $CHILD gone"
echo "== gpus (after)"; $py -m eagle_console gpus
echo "== benchmarks/gpu_sample.py"; $py benchmarks/gpu_sample.py | tee "$OUT/gpu_sample.json"
echo "== benchmarks/holder_scan.py"; $py benchmarks/holder_scan.py | tee "$OUT/holder_scan.json"
