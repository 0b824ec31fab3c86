#!/usr/bin/env bash
# On a real GPU node (root): a plan step runs a torch worker holding 4 GiB; the wall clock is stepped 5 s
# forward (as chrony's makestep does after a VM resumes), `next` reconciles, the clock goes back, and K
# (`orphans --kill --yes`) runs. A run must stay live and its worker its own throughout; before the fix the
# run was recorded lost and the worker killed. Each checkout named is run in turn (this one first).
# Usage (repo root): OUT=/some/dir bash benchmarks/h200_clock.sh [OLDER_CHECKOUT...]
. "$(dirname "$0")/_h200_env.sh"
export EAGLE_CONSOLE_GPU_BACKEND=nvml EAGLE_CONSOLE_KILL_GRACE=5
here=$(pwd) base=$PYTHONPATH
brief() {  # brief LABEL: the step's status and run, and the GPU holders as the CLI classes them
  echo "-- $1: btime $(awk '/^btime/ {print $2}' /proc/stat)"
  $py -m eagle_console status "$plan" --json | $py -c '
import json, sys; d = json.load(sys.stdin); s = d["phases"][0]["steps"][0]; r = s["run"] or {}
print("status", s["status"], "ended", r.get("ended"), "supervisor", r.get("supervisor_state"), "action", r.get("action_state"))'
  $py -m eagle_console orphans "$plan" --json | $py -c '
import json, sys; d = json.load(sys.stdin)
print("holders", [(h["pid"], h["class"], h["owner"], h["used_mib"]) for h in d["holders"]], "error", d.get("error"))'
}
for tree in "$here" "$@"; do
  cd "$tree" || exit 1
  export PYTHONPATH=$tree:$base
  work=$(mktemp -d); plan=$work/plan.toml
  cat > "$plan" <<EOF
[plan]
id = "clock"
title = "a clock step under a live GPU run"

[[phase]]
id = "0"
title = "serve"

  [[phase.step]]
  id = "0.1"
  title = "hold 4 GiB"
  run = ["$py", "/tmp/holder.py", "4"]

  [[phase.step]]
  id = "0.2"
  title = "look"
  needs = ["0.1"]
EOF
  echo "== $tree ($(git -C "$tree" log --oneline -1 2>/dev/null || cat "$tree/.commit" 2>/dev/null))"
  $py -m eagle_console run "$plan" 0.1 --yes
  log=$($py -m eagle_console status "$plan" --json | $py -c 'import json,sys; print(json.load(sys.stdin)["phases"][0]["steps"][0]["run"]["log"])')
  wait_allocated "$log"
  brief "before the step"
  date -s "+5 seconds" > /dev/null
  $py -m eagle_console next "$plan" --yes 2>&1 | tail -1
  brief "clock stepped +5 s, after next"
  date -s "-5 seconds" > /dev/null
  brief "clock back"
  echo "-- K on the real clock"
  $py -m eagle_console orphans "$plan" --json --kill --yes --grace 5s | $py -c '
import json, sys; d = json.load(sys.stdin); print("killed", d["killed"], "freed", d["freed_mib"])'
  nvidia-smi --query-compute-apps=pid,used_memory --format=csv,noheader
  brief "after K"
  $py -m eagle_console rollback "$plan" 0.1 --yes --force > /dev/null 2>&1
  pkill -f /tmp/holder.py; sleep 1
  cd "$here"
done
