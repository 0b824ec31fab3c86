#!/usr/bin/env bash
# On a real GPU node (root): a second user on the node, with real NVML. A torch worker holding 4 GiB as user
# nobody and one holding 2 GiB as root, each orphaned (a setsid shell starts it and exits), then
# `orphans --kill --yes --json` as root (root's killed; nobody's not signalled: exit 1, its memory held) and
# `orphans --kill --yes --json --pid PID` (nobody's, killed by root's pick; NVML says its memory came back).
# Usage (repo root): OUT=/some/dir bash benchmarks/h200_users.sh
. "$(dirname "$0")/_h200_env.sh"
export EAGLE_CONSOLE_GPU_BACKEND=nvml EAGLE_CONSOLE_KILL_GRACE=5s
setsid sh -c "setpriv --reuid 65534 --regid 65534 --clear-groups $py /tmp/holder.py 4 > /tmp/theirs.out 2>&1 &
  echo \$! > /tmp/theirs.pid"
setsid sh -c "$py /tmp/holder.py 2 > /tmp/mine.out 2>&1 & echo \$! > /tmp/mine.pid"
sleep 1; wait_allocated /tmp/theirs.out; wait_allocated /tmp/mine.out
theirs=$(cat /tmp/theirs.pid) mine=$(cat /tmp/mine.pid)
echo "theirs $theirs ($(ps -o user= -p "$theirs")): $(cat /tmp/theirs.out); mine $mine: $(cat /tmp/mine.out)"
apps() { nvidia-smi --query-compute-apps=pid,used_memory --format=csv,noheader | tr '\n' ';'; echo; }
echo "nvidia-smi: $(apps)"
for step in "list:" "kill:--kill --yes" "pick:--kill --yes --pid $theirs"; do
  name=${step%%:*}
  $py -m eagle_console orphans --json ${step#*:} > "$OUT/users-$name.json" 2> "$OUT/users-$name.err"
  echo "== orphans ${step#*:}: rc=$?"; tail -n 3 "$OUT/users-$name.err"
  $py - "$OUT/users-$name.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
for h in d["holders"]:
    print("  holder", h["pid"], h["user"], h["class"], h["used_mib"], "MiB ·", h["reason"])
print("  killed", d["killed"], "survivors", d["survivors"], "freed_mib", d["freed_mib"], "error", d["error"])
PY
  echo "  nvidia-smi after: $(apps)"
done
kill "$theirs" "$mine" 2>/dev/null; true
