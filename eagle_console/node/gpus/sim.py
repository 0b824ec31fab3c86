"""GPUs of a simulated node (eagle_console.sim.gpustate): memory used is what live holders registered.

In container mode (node.json "pid_offset") the process lists carry host pids, as NVML in an LXC container
does: local pid + offset, which no local process has.
"""

from __future__ import annotations

import time
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
        self.release_lag_s = gpustate.release_lag(self.sim_dir)
        # holders seen by this backend: a vanished one keeps its memory in the totals for release_lag_s
        self._seen: dict[int, dict[int, float]] = {}
        self._leaving: dict[int, tuple[float, dict[int, float]]] = {}

    def sample(self) -> NodeSample:
        holders = gpustate.holders(self.sim_dir)
        util = gpustate.activity(self.sim_dir)
        leaving = self._lagging({h.pid: dict(h.mib) for h in holders})
        hidden = gpustate.outside(self.sim_dir)
        out: list[GpuSample] = []
        for g in self.gpus:
            idx = int(g["index"])
            procs = [GpuProcessSample(h.pid + self.pid_offset, float(h.mib[idx])) for h in holders if idx in h.mib]
            busy = float(util.get(idx, 0.0)) if procs else 0.0
            limit = float(g["power_limit_w"])
            out.append(GpuSample(
                index=idx, name=g["name"], uuid=g["uuid"],
                memory_total_mib=float(g["memory_total_mib"]),
                memory_used_mib=min(sum(p.used_mib or 0.0 for p in procs) + leaving.get(idx, 0.0)
                                    + hidden.get(idx, 0.0), float(g["memory_total_mib"])),
                utilization_pct=busy,
                temperature_c=round(IDLE_TEMP_C + TEMP_PER_UTIL_C * busy, 1),
                power_w=round(limit * (IDLE_POWER_FRACTION + (1 - IDLE_POWER_FRACTION) * busy / 100), 1),
                power_limit_w=limit, pcie_gen=g.get("pcie_gen"), pcie_width=g.get("pcie_width"),
                minor=g.get("minor", idx), processes=procs,
            ))
        return NodeSample(backend="sim", driver="sim", error=None, gpus=out)

    def _lagging(self, live: dict[int, dict[int, float]]) -> dict[int, float]:
        """MiB per GPU of holders gone from the lists less than release_lag_s ago (as the driver frees it)."""
        now = time.monotonic()
        for pid, mib in self._seen.items():
            if pid not in live and self.release_lag_s > 0:
                self._leaving.setdefault(pid, (now, mib))
        self._seen = live
        out: dict[int, float] = {}
        for pid, (since, mib) in list(self._leaving.items()):
            if now - since >= self.release_lag_s or pid in live:
                del self._leaving[pid]
                continue
            for idx, v in mib.items():
                out[idx] = out.get(idx, 0.0) + float(v)
        return out

    def close(self) -> None:
        pass
