"""GPU readings behind one small interface: NVML (real driver), sim (a simulated node), none (no driver).

Every backend returns a NodeSample; a field the source cannot give is None, never an exception. The
console polls `sample()` every second, so backends keep their setup (NVML init, handles) across calls.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

# Forces a backend without touching code: "nvml", "sim" or "none" (tests and driverless demos use it).
BACKEND_ENV = "EAGLE_CONSOLE_GPU_BACKEND"


@dataclass
class GpuProcessSample:
    pid: int
    used_mib: float | None


@dataclass
class GpuSample:
    index: int
    name: str | None = None
    uuid: str | None = None
    memory_total_mib: float | None = None
    memory_used_mib: float | None = None
    utilization_pct: float | None = None
    temperature_c: float | None = None
    power_w: float | None = None
    power_limit_w: float | None = None
    pcie_gen: int | None = None
    pcie_width: int | None = None
    minor: int | None = None  # /dev/nvidia<minor>: maps fd holders to this GPU
    processes: list[GpuProcessSample] | None = field(default_factory=list)  # None: not readable


@dataclass
class NodeSample:
    backend: str  # "nvml" | "sim" | "none"
    driver: str | None
    error: str | None
    gpus: list[GpuSample]

    def gpu_by_minor(self) -> dict[int, int]:
        """Device minor number -> GPU index (falls back to minor == index when NVML gives no minor)."""
        return {(g.minor if g.minor is not None else g.index): g.index for g in self.gpus}


def cannot_read(backend: str, error: str | None) -> str:
    """How every face and built-in says that the GPUs (or some of their readings) could not be read."""
    return f"cannot read the GPUs ({backend}): {error}"


class GpuBackend(Protocol):
    name: str
    device_prefix: str  # fd-link prefix of this node's device files, e.g. "/dev/nvidia"

    def sample(self) -> NodeSample: ...

    def close(self) -> None: ...


def open_backend(sim_dir: Path | None, prefer: str | None = None) -> GpuBackend:
    """sim when `sim_dir` is given, else NVML, else `none` carrying the reason NVML could not start."""
    from eagle_console.node.gpus.none import NoneBackend

    choice = prefer or os.environ.get(BACKEND_ENV) or None
    if choice not in (None, "nvml", "sim", "none"):
        return NoneBackend(f"unknown GPU backend {choice!r} (use nvml, sim or none)")
    if choice == "none":
        return NoneBackend("GPU backend 'none' was requested")
    if choice == "sim" or (choice is None and sim_dir is not None):
        if sim_dir is None:
            return NoneBackend("GPU backend 'sim' needs a sim directory (--sim DIR)")
        from eagle_console.node.gpus.sim import SimBackend

        try:
            return SimBackend(Path(sim_dir))
        except OSError as exc:
            return NoneBackend(f"cannot read the simulated node in {sim_dir}: {exc}")
    from eagle_console.node.gpus.nvml import NvmlBackend, NvmlUnavailable

    try:
        return NvmlBackend()
    except NvmlUnavailable as exc:
        return NoneBackend(str(exc))


__all__ = ["BACKEND_ENV", "GpuBackend", "cannot_read", "GpuProcessSample", "GpuSample", "NodeSample", "open_backend"]
