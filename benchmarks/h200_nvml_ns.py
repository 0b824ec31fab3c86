"""What NVML reports inside a PID namespace (a real reading for the holder scan's namespace rule).

Run inside `unshare --pid --fork --mount-proc` while a GPU holder runs OUTSIDE it (its pid given as argv[1],
as the host sees it) and one inside (started here). Prints the driver version, NVML's raw process list and
what `gpus --json` decides. Usage: python3 benchmarks/h200_nvml_ns.py OUTSIDE_PID
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pynvml


def raw() -> dict:
    pynvml.nvmlInit()
    try:
        h = pynvml.nvmlDeviceGetHandleByIndex(0)
        procs = pynvml.nvmlDeviceGetComputeRunningProcesses(h)
        return {"driver": pynvml.nvmlSystemGetDriverVersion(),
                "nvml_pids": [(p.pid, None if p.usedGpuMemory is None else p.usedGpuMemory >> 20) for p in procs]}
    finally:
        pynvml.nvmlShutdown()


def main() -> int:
    inside = subprocess.Popen([sys.executable, "/tmp/holder.py", "3"], stdout=subprocess.PIPE, text=True)
    assert "allocated" in inside.stdout.readline()
    out = {"outside_pid_as_host_sees_it": int(sys.argv[1]), "inside_pid": inside.pid,
           "pid_ns": os.readlink("/proc/self/ns/pid"), **raw()}
    cli = subprocess.run([sys.executable, "-m", "eagle_console", "gpus", "--json"], capture_output=True, text=True)
    doc = json.loads(cli.stdout) if cli.returncode == 0 else {"error": cli.stderr[-500:]}
    out["gpus_json"] = {k: doc.get(k) for k in ("pid_namespace", "gpus", "error") if k in doc}
    inside.kill()
    inside.wait()
    print(json.dumps(out, indent=1, default=str))
    return 0


if __name__ == "__main__":
    sys.exit(main())
