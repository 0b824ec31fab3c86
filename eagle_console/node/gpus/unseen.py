"""GPU memory that no process visible here accounts for.

Inside an LXC container (the target node runs Proxmox) or a PID namespace, NVML can report memory in use on
a GPU while listing no process for it, or listing fewer than hold it: the holders live on the host or in
another container, where no scan from here can see them. Saying "no GPU holders" then is a wrong answer;
every face says instead how much is held out of sight, per GPU, and where to look.

The figure is the GPU's used memory minus what NVML lists per process. An idle GPU is not at zero: the
driver keeps some for itself (615 MiB on an idle H200, driver 580.159.04, with no process listed:
nvmlDeviceGetMemoryInfo; docs/operations.md), so a note is given only above UNSEEN_NOTE_MIB.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from eagle_console.node.gpus import GpuSample, NodeSample

UNSEEN_NOTE_MIB = 1024.0  # above the driver's own share on an idle GPU (615 MiB measured on an H200)
WHERE_TO_LOOK = ("look from the host: `nvidia-smi` there lists them (on Proxmox, `pct list` names the "
                 "containers; `pct exec ID -- nvidia-smi` looks inside one)")


def unattributed_mib(g: GpuSample) -> float | None:
    """Used memory no listed process accounts for; None when the used total or a listed process's share
    is unknown (then nothing can be said)."""
    if g.memory_used_mib is None or g.processes is None:
        return None
    listed = [p.used_mib for p in g.processes]
    if any(v is None for v in listed):
        return None
    return round(max(0.0, g.memory_used_mib - sum(v for v in listed if v is not None)), 1)


def unseen_by_gpu(sample: NodeSample) -> dict[int, float]:
    """GPU index -> MiB held out of sight, for the GPUs where that is more than the driver's own share."""
    out = {}
    for g in sample.gpus:
        mib = unattributed_mib(g)
        if mib is not None and mib > UNSEEN_NOTE_MIB:
            out[g.index] = mib
    return out


def unseen_note(index: int, mib: float) -> str:
    # "in use that no process here accounts for", not "held by N processes": the figure includes the driver's
    # own share, and NVML does not say how many processes hold the rest
    return f"GPU {index}: {mib:,.0f} MiB in use that no process here accounts for (another container or the host)"


def unseen_notes(sample: NodeSample, only: set[int] | None = None) -> list[str]:
    """One line per GPU with memory held out of sight (of `only`, when given), then where to look; empty
    when there is none."""
    notes = [unseen_note(i, mib) for i, mib in sorted(unseen_by_gpu(sample).items()) if only is None or i in only]
    return [*notes, WHERE_TO_LOOK] if notes else []
