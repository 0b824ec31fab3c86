#!/usr/bin/env bash
# On a real GPU node (issue #15): K in the console kills exactly 4 orphaned CUDA workers, a live job survives;
# then the same with NVML pids made foreign (everything inside `unshare --pid --fork --mount-proc`, as in LXC).
# First (issue 26): the same from the console's own session, as an operator's `… &` leaves them.
# Usage (repo root, Textual importable): OUT=/some/dir bash benchmarks/h200_k.sh
. "$(dirname "$0")/_h200_env.sh"
echo "== from the console's own terminal session (issue 26): a new session, as a login shell is"
setsid --wait bash -c "$py benchmarks/h200_k.py session 4 3" | tee "$OUT/k_session.json"; echo "rc=${PIPESTATUS[0]}"
echo "== plain (NVML pids are ours)"
$py benchmarks/h200_k.py local 4 3 | tee "$OUT/k_local.json"; echo "rc=${PIPESTATUS[0]}"
echo "== unshare --pid --fork --mount-proc (NVML pids are the host's)"
if unshare --pid --fork --mount-proc true 2>"$OUT/unshare.err"; then
  unshare --pid --fork --mount-proc bash -c "$py benchmarks/h200_k.py foreign 4 3; echo rc=\$?" | tee "$OUT/k_foreign.json"
else
  echo "unshare refused: $(cat "$OUT/unshare.err")"
fi
nvidia-smi --query-compute-apps=pid,used_memory --format=csv
echo "== NVML inside a PID namespace, a holder outside it"
$py /tmp/holder.py 2 > /tmp/outside.out 2>&1 &
OUTSIDE=$!; wait_allocated /tmp/outside.out
unshare --pid --fork --mount-proc bash -c "$py benchmarks/h200_nvml_ns.py $OUTSIDE; echo rc=\$?" | tee "$OUT/nvml_ns.json"
echo "== the same holder seen by the console's faces from inside the namespace (issue 26: memory out of sight)"
unshare --pid --fork --mount-proc bash -c "$py -m eagle_console orphans; $py -m eagle_console gpus; \
  $py -m eagle_console orphans --json" | tee "$OUT/unseen.txt"
kill $OUTSIDE
