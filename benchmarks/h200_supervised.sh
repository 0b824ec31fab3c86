#!/usr/bin/env bash
# On a real GPU node: a step's torch worker (2 GiB) run by `eagle-console run`, then `orphans --json` with no
# PLAN (the worker `other`, its reason naming the run from its supervisor: node/supervised.py) and with the
# plan (`tracked`), and `orphans --kill --yes` without the plan (nothing killed: it is no orphan).
# Usage (repo root): OUT=/some/dir bash benchmarks/h200_supervised.sh
. "$(dirname "$0")/_h200_env.sh"
export EAGLE_CONSOLE_GPU_BACKEND=nvml
dir=$(mktemp -d)
cat > "$dir/plan.toml" <<TOML
[plan]
id = "sup"
title = "a step holding a GPU"

[[phase]]
id = "0"
title = "p"

  [[phase.step]]
  id = "0.1"
  title = "hold 2 GiB"
  run = ["$py", "/tmp/holder.py", "2"]
TOML
$py -m eagle_console run "$dir/plan.toml" 0.1 --yes
log="$dir/.eagle-console/sup/logs/0.1-1.log"
wait_allocated "$log"; cat "$log"
show() {
  $py - "$1" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
for h in d["holders"]:
    print("  holder", h["pid"], h["class"], h["owner"], h["used_mib"], "MiB ·", h["reason"])
print("  killed", d.get("killed"))
PY
}
$py -m eagle_console orphans --json > "$OUT/sup-noplan.json"
echo "== orphans (no plan): rc=$?"; show "$OUT/sup-noplan.json"
$py -m eagle_console orphans "$dir/plan.toml" --json > "$OUT/sup-plan.json"
echo "== orphans PLAN: rc=$?"; show "$OUT/sup-plan.json"
$py -m eagle_console orphans --kill --yes --json > "$OUT/sup-kill.json" 2>"$OUT/sup-kill.err"
echo "== orphans --kill --yes (no plan): rc=$?"; show "$OUT/sup-kill.json"
apps() { nvidia-smi --query-compute-apps=pid,used_memory --format=csv,noheader | tr '\n' ';'; }
echo "nvidia-smi: $(apps)"
$py -m eagle_console rollback "$dir/plan.toml" 0.1 --yes --force > /dev/null 2>&1
sleep 3; echo "after rollback, nvidia-smi: $(apps)"
pkill -f /tmp/holder.py; true
