#!/usr/bin/env bash
# On a real GPU node (root): root runs a step of an operator's plan (`sudo eagle-console run …`), the step a
# torch worker holding 3 GiB. The operator (user nobody) then reads its log and tries to roll it back: the
# state root wrote must be theirs, and their rollback must fail at once saying the run is root's (before:
# "stopped the run's session", "rolled back", exit 0, while the worker held its memory). Root's own rollback
# then stops it; NVML says the memory came back. A second user opening a plan whose state is root's is told
# whose it is. Usage (repo root): OUT=/some/dir bash benchmarks/h200_shared_plan.sh
. "$(dirname "$0")/_h200_env.sh"
export EAGLE_CONSOLE_GPU_BACKEND=nvml
top=$(mktemp -d /tmp/shared-XXXX); chmod 755 "$top"; mkdir "$top/plans"
cat > "$top/plans/plan.toml" <<EOF
[plan]
id = "shared"
title = "root runs an operator's step"

[[phase]]
id = "0"
title = "P"
  [[phase.step]]
  id = "0.1"
  title = "hold 3 GiB of GPU memory"
  run = "$py /tmp/holder.py 3"
  rollback = "echo undone"
EOF
chown -R 65534:65534 "$top/plans"
site=$(mktemp -d /tmp/site-XXXX); cp -r eagle_console "$site/"; chmod -R a+rX "$site"  # nobody reads our code
as_nobody() {
  setpriv --reuid 65534 --regid 65534 --clear-groups env PYTHONPATH="$site:$PYTHONPATH" HOME=/tmp "$@"
}
apps() { nvidia-smi --query-compute-apps=pid,used_memory --format=csv,noheader | tr '\n' ';'; echo; }
plan=$top/plans/plan.toml
$py -m eagle_console run "$plan" 0.1 --yes; echo "== root: run 0.1: rc=$?"
log=$(ls "$top"/plans/.eagle-console/shared/logs/0.1-*.log); wait_allocated "$log"
echo "nvidia-smi: $(apps)"
echo "== files under the state dir not nobody's: $(find "$top/plans/.eagle-console" ! -user nobody | wc -l)"
(cd /tmp && as_nobody $py -m eagle_console log "$plan" 0.1); echo "== nobody: log: rc=$?"
said=$OUT/shared-rollback-nobody.txt
(cd /tmp && time as_nobody $py -m eagle_console rollback "$plan" 0.1 --yes) > "$said" 2>&1
echo "== nobody: rollback: $(grep -c 'rolled back: 0.1' "$said") 'rolled back' lines"
cat "$said"
echo "nvidia-smi after nobody's rollback: $(apps)"
$py -m eagle_console rollback "$plan" 0.1 --yes; echo "== root: rollback: rc=$?"
sleep 2; echo "nvidia-smi after root's rollback: $(apps)"
# a second user opening a plan whose state is root's
mkdir "$top/rootplan"; cp "$plan" "$top/rootplan/plan.toml"; chmod 755 "$top/rootplan"
$py -m eagle_console mark "$top/rootplan/plan.toml" 0.1 skipped > /dev/null  # root's state, made by root
(cd /tmp && as_nobody $py -m eagle_console status "$top/rootplan/plan.toml")
echo "== nobody: status of root's plan: rc=$?"
