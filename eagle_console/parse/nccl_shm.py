"""Why GPU pairs of one host talk through SHM instead of P2P: the verdict behind the SHM_FALLBACK finding.

NCCL's P2P cutoff (graph/paths.cc ncclTopoCheckP2p): P2P is used when the PCI distance is at most the level,
then only if NVML reports P2P read/write OK for the pair. The default level is PXB from 2.23 on every CPU;
before, SYS except on Intel, Zhaoxin and ARM hosts (PXB). NCCL_P2P_LEVEL overrides the distance, never the
NVML check — so SHM despite NCCL_P2P_LEVEL=SYS means NVML said no (ACS, IOMMU, VM passthrough).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

# NCCL 2.23 moved the default P2P cutoff to PXB on every CPU: SHM across a CPU host bridge is the designed
# default. Before, the default was SYS except on Intel, Zhaoxin and ARM hosts, which already had PXB
# (graph/paths.cc ncclTopoCheckP2p, v2.12 … v2.22.3).
SHM_DEFAULT_SINCE = (2, 23)
CPU_ARCH_ARM, CPU_VENDOR_INTEL, CPU_VENDOR_AMD, CPU_VENDOR_ZHAOXIN = 3, 1, 2, 3
# NCCL_P2P_LEVEL values that allow P2P across a CPU host bridge (PHB) or between sockets (SYS); the old
# numeric form maps 3 → PHB and ≥ 4 → SYS (paths.cc levelsOldToNew).
WIDE_P2P_LEVELS = ("PHB", "SYS")
TUNING_HINT = (" To try P2P across the bridge: NCCL_P2P_LEVEL=SYS (check ACS/IOMMU first — P2P that NVML calls "
               "OK but the fabric drops hangs instead of falling back). On 8× RTX PRO 6000 nodes whose GPUs sit "
               "in pairs behind PEX890xx switches this is the stock picture — P2P inside each pair, SHM across "
               "— and NCCL_P2P_LEVEL=SYS is the known lever.")


def _p2p_level(value: str) -> str:
    """`NCCL_P2P_LEVEL set by environment to PHB` → 'PHB'; old numeric values mapped as NCCL maps them."""
    value = value.strip().upper()
    if value.isdigit():
        return ("LOC", "PIX", "PXB", "PHB", "SYS")[min(int(value), 4)]
    return value


def card_class(gpu_names: Sequence[str]) -> str | None:
    """'GeForce' when the GPUs' NVML names (`NVIDIA GeForce RTX 4090`) say consumer cards, else None."""
    geforce = sorted({n for n in gpu_names if "geforce" in n.lower()})
    return f"GeForce ({', '.join(geforce)})" if geforce else None


def shm_verdict(version: tuple[int, ...] | None, env: Mapping[str, str], cpu: tuple[int, int] | None,
                p2p_off: bool, gpu_names: Sequence[str] = ()) -> tuple[str, str]:
    """How bad SHM between GPUs of one host is, given the env overrides, the NCCL version, the CPU and the
    cards' names (NVML's, from the GPU reading: NCCL's log does not name the card)."""
    level = _p2p_level(env.get("NCCL_P2P_LEVEL", ""))
    if p2p_off:
        if env.get("NCCL_P2P_DISABLE", "").strip() == "1":
            return "info", " Expected: NCCL_P2P_DISABLE=1 is set."
        return "info", (" Expected: NCCL_P2P_LEVEL=LOC turns P2P off (NCCL <= 2.22 logs NCCL_P2P_DISABLE=1 "
                        "so).")
    cards = card_class(gpu_names)
    if cards:
        # NCCL asks NVML (ncclTopoCheckP2p's checkNvml block); the stock driver reports no PCIe P2P between
        # GeForce cards (NVIDIA/nccl#1127: RTX 4090; #175: 1080 Ti "chipset not supported"), whatever the
        # P2P level, ACS or IOMMU say.
        return "info", (f" Expected on {cards}: the driver offers no PCIe P2P between GeForce cards, so NVML "
                        "reports P2P as not supported and NCCL uses SHM whatever NCCL_P2P_LEVEL says — not an "
                        "ACS/IOMMU problem (`nvidia-smi topo -p2p r` shows NS).")
    if level in WIDE_P2P_LEVELS:
        return "warning", (
            f" NCCL_P2P_LEVEL={level} is set by environment, so NCCL allowed P2P by distance"
            + (" (up to PHB: pairs across sockets still use SHM)" if level == "PHB" else "")
            + "; SHM anyway means NVML reports P2P as not OK between those GPUs — PCIe ACS or the IOMMU "
            "redirecting peer traffic, or a VM (Proxmox/KVM passthrough) without P2P. Check "
            "`nvidia-smi topo -p2p r` and `lspci -vvv | grep ACSCtl`.")
    if level:
        return "info", f" Expected: NCCL_P2P_LEVEL={level} (set by environment) limits P2P to that distance."
    where = " (GPUs behind one PCIe switch), so pairs across a CPU host bridge use SHM by default."
    if version is not None and version >= SHM_DEFAULT_SINCE:
        return "info", (f" Normal on NCCL {'.'.join(map(str, version))} (≥ 2.23): P2P is used only up to PXB"
                        + where + TUNING_HINT)
    pxb_cpu = cpu is not None and (cpu[0] == CPU_ARCH_ARM
                                        or cpu[1] in (CPU_VENDOR_INTEL, CPU_VENDOR_ZHAOXIN))
    shown = ".".join(map(str, version)) if version else "this NCCL"
    if pxb_cpu:
        return "info", (f" Normal on {shown} on an Intel/Zhaoxin/ARM host: P2P is used only up to PXB" + where
                        + TUNING_HINT)
    if cpu is not None:
        return "warning", (f" On {shown} (< 2.23) with this CPU the default allows P2P across the host bridge "
                           "(SYS), so SHM suggests NVML reports P2P as not OK (ACS/IOMMU, VM passthrough) — "
                           "check `nvidia-smi topo -p2p r`.")
    if version is None:
        return "warning", (" The NCCL version is not in the log: on NCCL ≥ 2.23 (and on Intel/ARM hosts "
                           "before) this is the default across a CPU host bridge; otherwise it suggests P2P "
                           "is unavailable (ACS/IOMMU).")
    return "warning", (" Before 2.23 the default depends on the CPU: PXB on Intel, Zhaoxin and ARM hosts "
                       "(then SHM across the host bridge is normal), SYS elsewhere, e.g. AMD (then SHM "
                       "suggests NVML reports P2P as not OK: ACS/IOMMU). The log does not name the CPU "
                       "(NCCL_DEBUG_SUBSYS=GRAPH prints it).")

