#!/usr/bin/env bash
# On a real GPU node (root): /proc mounted with hidepid=2 (a node shared by several users, each seeing only
# their own processes), a torch worker holding 4 GiB as one user (nobody), and `gpus --json` and
# `orphans --json --kill --yes` as another (uid 4242), with real NVML. Each checkout named is run in turn
# (this one first): the GPU's memory and the worker must be shown, in this PID namespace, never killed.
# Usage (repo root): OUT=/some/dir bash benchmarks/h200_hidepid.sh [OLDER_CHECKOUT...]
. "$(dirname "$0")/_h200_env.sh"
export EAGLE_CONSOLE_GPU_BACKEND=nvml
site=${PYTHONPATH#.:}  # the carried wheels (Textual is not needed here)
setpriv --reuid 65534 --regid 65534 --clear-groups $py /tmp/holder.py 4 > /tmp/hidden_worker.out 2>&1 &
worker=$!
wait_allocated /tmp/hidden_worker.out
echo "worker pid $worker (user nobody): $(cat /tmp/hidden_worker.out)"
for tree in "$(pwd)" "$@"; do
  copy=$(mktemp -d /tmp/hidepid-tree.XXXX)  # readable by uid 4242 (the checkout may sit under /root)
  cp -r "$tree/eagle_console" "$copy/" && chmod -R a+rX "$copy"
  echo "== $tree ($(cat "$tree/.commit" 2>/dev/null || echo 'this checkout'))"
  for cmd in "gpus --json" "orphans --json --kill --yes --grace 5s"; do
    unshare --mount --propagation private sh -c "mount -t proc -o hidepid=2 proc /proc && cd $copy && \
      exec setpriv --reuid 4242 --regid 4242 --clear-groups env PYTHONPATH=$copy:$site HOME=/tmp \
      EAGLE_CONSOLE_GPU_BACKEND=nvml $py -m eagle_console $cmd" > /tmp/hidepid.json 2> /tmp/hidepid.err
    echo "-- $cmd: rc=$?"; head -c 400 /tmp/hidepid.err
    $py - <<'PY'
import json
d = json.load(open("/tmp/hidepid.json"))
if "holders" in d:
    print("holders", [(h["pid"], h["class"], h["command"], h["used_mib"], h["reason"]) for h in d["holders"]])
    print("killed", d["killed"], "error", d.get("error"))
else:
    print("pid_namespace", d.get("pid_namespace"), "error", d["error"])
    for g in d["gpus"]:
        print("gpu", g["index"], "used", g["memory_used_mib"], [(p["pid"], p["class"], p["command"]) for p in g["processes"]])
PY
  done
  ps -o pid,user,stat,cmd -p "$worker" | tail -n +2 || echo "worker $worker gone"
done
kill "$worker"; wait "$worker" 2>/dev/null
