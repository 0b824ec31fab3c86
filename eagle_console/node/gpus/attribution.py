"""Which process uses which GPU: NVML's per-GPU process lists reconciled with the /dev/nvidia* fd scan.

Two facts shape the rules (docs/decisions.md, "GPU holders in containers"):
- a CUDA process opens every visible /dev/nvidiaN, not only the GPU it uses, so the fd scan says *that*
  a process holds the GPUs, never *which*;
- NVML's pids are the host's (the driver has no PID namespaces), so inside an LXC container or Docker
  without --pid=host they name no local process, or worse, an unrelated one.
So NVML's lists say which GPU and how much; a pid from them is believed only with fd evidence.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from eagle_console.processes import hidden

if TYPE_CHECKING:
    from eagle_console.node.gpus import NodeSample

LOCAL, FOREIGN = "local", "foreign"
UVM = "-uvm"  # /dev/nvidia-uvm: opened by the CUDA runtime, not by NVML monitors or persistenced


@dataclass
class DeviceFiles:
    """What one local process has open under the device prefix."""

    minors: set[int] = field(default_factory=set)
    uvm: bool = False


@dataclass
class GpuUse:
    """One process's use of the GPUs, as attributed: gpus None when unknown."""

    gpus: list[int] | None
    used_by_gpu: dict[int, float]
    has_context: bool
    nvml_pid: int | None = None


def fd_contradicts(pid: int, fd_pids: set[int], proc_root: str = "/proc") -> bool:
    """True when the fd scan proves NVML's `pid` is not a local GPU process: no such local process, or
    one whose fds we can read and none is a device file. An unreadable fd dir proves nothing."""
    if pid in fd_pids:
        return False
    try:
        os.listdir(f"{proc_root}/{pid}/fd")
    except FileNotFoundError:  # no such process here, unless /proc hides another user's from us (hidepid)
        return proc_root != "/proc" or not hidden(pid)
    except OSError:
        return False
    return True


def pid_namespace(nvml_pids: set[int], fd_pids: set[int], proc_root: str = "/proc") -> str:
    """"foreign" when NVML's pids disagree with the fd scan more often than they agree.

    A local process can exit between the NVML sample and the scan (one contradiction); a host pid can
    equal a local GPU process's pid by chance (one agreement): the majority decides, a tie is foreign.
    """
    if not nvml_pids:
        return LOCAL
    agree = len(nvml_pids & fd_pids)
    contradict = sum(fd_contradicts(p, fd_pids, proc_root) for p in nvml_pids)
    return FOREIGN if contradict and contradict >= agree else LOCAL


def nvml_use(sample: NodeSample | None) -> dict[int, dict[int, float | None]]:
    """NVML pid -> {gpu index: MiB or None}."""
    out: dict[int, dict[int, float | None]] = {}
    for g in sample.gpus if sample is not None else []:
        for p in g.processes or []:
            out.setdefault(p.pid, {})[g.index] = p.used_mib
    return out


def fd_gpus(files: DeviceFiles, minor_to_index: dict[int, int], gpu_count: int) -> list[int] | None:
    """GPUs a process without a known context holds by its files: exact when it opened some of the
    GPUs' files (or the node has one GPU); unknown (None) when it opened all of them, as CUDA does."""
    gpus = sorted({minor_to_index.get(m, m) for m in files.minors})
    if not gpus:
        return []
    if gpu_count > 1 and len(gpus) >= gpu_count:
        return None
    return gpus


def _known(per_gpu: dict[int, float | None]) -> dict[int, float]:
    return {k: v for k, v in per_gpu.items() if v is not None}


def attribute_local(fds: dict[int, DeviceFiles], nvml: dict[int, dict[int, float | None]],
                    minor_to_index: dict[int, int], gpu_count: int,
                    proc_root: str = "/proc") -> tuple[dict[int, GpuUse], dict[int, dict[int, float | None]]]:
    """Same namespace: an NVML pid is the local process of that pid when the fd scan backs it.

    Returns (local pid -> use, NVML entries no local process backs: kept, labelled, never signalled)."""
    uses: dict[int, GpuUse] = {}
    unbacked: dict[int, dict[int, float | None]] = {}
    fd_pids = set(fds)
    for pid, per_gpu in nvml.items():
        if fd_contradicts(pid, fd_pids, proc_root):
            unbacked[pid] = per_gpu
        else:
            uses[pid] = GpuUse(sorted(per_gpu), _known(per_gpu), True, pid)
    for pid, files in fds.items():
        if pid not in uses:
            uses[pid] = GpuUse(fd_gpus(files, minor_to_index, gpu_count), {}, False)
    return uses, unbacked


def attribute_foreign(fds: dict[int, DeviceFiles], nvml: dict[int, dict[int, float | None]],
                      minor_to_index: dict[int, int], gpu_count: int,
                      ) -> tuple[dict[int, GpuUse], dict[int, dict[int, float | None]]]:
    """Host pids: no NVML pid names a local process. The local CUDA processes (nvidia-uvm open) take
    the NVML entries only when that is unambiguous: as many of them as entries, and every entry the
    same GPUs and MiB, so any pairing gives each the same answer. Else their GPU is unknown, and the
    entries stay as host-pid rows so the memory is still shown.
    """
    cuda = sorted(pid for pid, f in fds.items() if f.uvm)
    signatures = {tuple(sorted(per_gpu.items())) for per_gpu in nvml.values()}
    paired = bool(cuda) and len(cuda) == len(nvml) and len(signatures) == 1
    uses: dict[int, GpuUse] = {}
    for pid, files in fds.items():
        if paired and pid in cuda:
            per_gpu = dict(next(iter(signatures)))
            uses[pid] = GpuUse(sorted(per_gpu), _known(per_gpu), True)
        elif files.uvm:  # the CUDA runtime is loaded: treat it as holding memory on a GPU we cannot name
            uses[pid] = GpuUse(None, {}, True)
        else:
            uses[pid] = GpuUse(fd_gpus(files, minor_to_index, gpu_count), {}, False)
    return uses, ({} if paired else dict(nvml))
