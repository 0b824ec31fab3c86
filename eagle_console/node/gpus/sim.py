"""GPUs of a simulated node (eagle_console.sim.gpustate): memory used is what live holders registered.

In container mode (node.json "pid_offset") the process lists carry host pids, as NVML in an LXC container
does: local pid + offset, which no local process has.
"""

from __future__ import annotations

from pathlib import Path

from eagle_console.node.gpus import GpuProcessSample, GpuSample, NodeSample
from eagle_console.sim import gpustate

IDLE_POWER_FRACTION = 0.12  # an idle card draws ~12% of its limit
IDLE_TEMP_C = 31.0
TEMP_PER_UTIL_C = 0.45  # 100% busy -> ~76 C, in the range of a loaded workstation card


class SimBackend:
    name = "sim"

    def __init__(self, sim_dir: Path) -> None:
        self.sim_dir = Path(sim_dir)
        self.gpus = gpustate.node_gpus(self.sim_dir)  # static description, read once
        # holders open SIM/dev/nvidiaN; /proc fd links show the resolved absolute path
        self.device_prefix = str((self.sim_dir / "dev").resolve() / "nvidia")
        self.pid_offset = gpustate.pid_offset(self.sim_dir)

    def sample(self) -> NodeSample:
        holders = gpustate.holders(self.sim_dir)
        util = gpustate.activity(self.sim_dir)
        out: list[GpuSample] = []
        for g in self.gpus:
            idx = int(g["index"])
            procs = [GpuProcessSample(h.pid + self.pid_offset, float(h.mib[idx])) for h in holders if idx in h.mib]
            busy = float(util.get(idx, 0.0)) if procs else 0.0
            limit = float(g["power_limit_w"])
            out.append(GpuSample(
                index=idx, name=g["name"], uuid=g["uuid"],
                memory_total_mib=float(g["memory_total_mib"]),
                memory_used_mib=min(sum(p.used_mib or 0.0 for p in procs), float(g["memory_total_mib"])),
                utilization_pct=busy,
                temperature_c=round(IDLE_TEMP_C + TEMP_PER_UTIL_C * busy, 1),
                power_w=round(limit * (IDLE_POWER_FRACTION + (1 - IDLE_POWER_FRACTION) * busy / 100), 1),
                power_limit_w=limit, pcie_gen=g.get("pcie_gen"), pcie_width=g.get("pcie_width"),
                minor=g.get("minor", idx), processes=procs,
            ))
        return NodeSample(backend="sim", driver="sim", error=None, gpus=out)

    def close(self) -> None:
        pass
