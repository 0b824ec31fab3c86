"""Simulated GPU memory: processes register what they "hold"; a dead process frees it.

Layout of a sim directory:
  node.json            the GPUs (name, uuid, memory_total_mib, pcie_gen, pcie_width, power_limit_w)
  dev/nvidia0..N-1     plain files standing in for the device nodes; holders keep them open, so the
                       same /proc/PID/fd scan that finds real GPU holders finds simulated ones
  dev/nvidiactl, dev/nvidia-uvm
                       a holder opens every device file, as a real CUDA process does (the fd scan
                       cannot tell which GPU it uses; the backend's per-GPU process lists can)
  holders/<pid>.json   {"pid", "start", "mib": {"<gpu>": MiB}, "command"}; "start" names the process
                       as the journal does (processes.start_of), so a step of the wall clock keeps it
  activity.json        {"pid", "util": {"<gpu>": 0..100}} written by the simulated server
  outside.json         {"<gpu>": MiB} held by processes this node's NVML does not list (the host's or another
                       container's, as seen from inside an LXC container): in the used totals, in no list
  node.json's "pid_offset" (container mode) is added to every pid the backend reports, as NVML inside
  an LXC container reports the host's pids

A holder file whose process is gone (or whose pid was reused: its start differs) is ignored and
removed by readers, which is how "a dead process frees its memory" without any cleanup hook.
"""

from __future__ import annotations

import json
import os
import uuid
from dataclasses import dataclass
from pathlib import Path

import psutil

from eagle_console.processes import alive, hidden, start_of

GPU_NAME = "NVIDIA RTX PRO 6000 Blackwell Workstation Edition"
GPU_MEMORY_MIB = 97887  # 96 GB cards as NVML reports them (MiB)
GPU_POWER_LIMIT_W = 600.0

# A real driver (H200, 580.159.04) stops listing a killed process before its memory leaves the GPU's
# used total (tests/data/h200/k_foreign.json: 3 of 4 workers' memory gone when the list was empty).
RELEASE_LAG_S = 0.5
CONTAINER_PID_OFFSET = 1_000_000  # above any pid_max the kernel allows (4194304 = 2**22): never a local pid
_held_fds: dict[str, int] = {}  # device files kept open for the life of this process, by path


@dataclass(frozen=True)
class SimHolder:
    pid: int
    start: str | float  # processes.start_of; a float from a node made by an older version
    mib: dict[int, float]
    command: str


def _write_atomic(path: Path, data: object) -> None:
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_text(json.dumps(data))
    os.replace(tmp, path)


def create_node(sim_dir: Path, gpus: int = 8, container: bool = False,
                release_lag_s: float = RELEASE_LAG_S) -> None:
    """Create (or reset the GPU description of) a simulated node; existing holders are kept.

    `container`: the node's NVML reports host pids (each local pid + CONTAINER_PID_OFFSET).
    `release_lag_s`: how long a dead holder's memory stays in the used totals after it left the lists."""
    sim_dir = Path(sim_dir)
    (sim_dir / "dev").mkdir(parents=True, exist_ok=True)
    (sim_dir / "holders").mkdir(exist_ok=True)
    node = {
        "gpus": [
            {
                "index": i,
                "name": GPU_NAME,
                # unique per node, as real GPUs' are: the console tells "node a is this machine" by them
                "uuid": f"GPU-{uuid.uuid5(uuid.NAMESPACE_URL, f'eagle-console-sim-{sim_dir.resolve()}-{i}')}",
                "memory_total_mib": GPU_MEMORY_MIB,
                "pcie_gen": 5,
                "pcie_width": 16,
                "power_limit_w": GPU_POWER_LIMIT_W,
                "minor": i,
            }
            for i in range(gpus)
        ],
        "pid_offset": CONTAINER_PID_OFFSET if container else 0,
        "release_lag_s": release_lag_s,
    }
    _write_atomic(sim_dir / "node.json", node)
    for i in range(gpus):
        (sim_dir / "dev" / f"nvidia{i}").touch()
    (sim_dir / "dev" / "nvidiactl").touch()
    (sim_dir / "dev" / "nvidia-uvm").touch()


def node_gpus(sim_dir: Path) -> list[dict]:
    return json.loads((Path(sim_dir) / "node.json").read_text())["gpus"]


def release_lag(sim_dir: Path) -> float:
    try:
        return float(json.loads((Path(sim_dir) / "node.json").read_text()).get("release_lag_s", 0.0))
    except (OSError, ValueError):
        return 0.0


def pid_offset(sim_dir: Path) -> int:
    """What the node's NVML adds to a local pid: 0, or CONTAINER_PID_OFFSET in container mode."""
    try:
        return int(json.loads((Path(sim_dir) / "node.json").read_text()).get("pid_offset", 0))
    except (OSError, ValueError):
        return 0


def open_device_files(sim_dir: Path) -> None:
    """Open every device file of the node once, as cuInit does: nvidia0..N-1, nvidiactl, nvidia-uvm."""
    dev = Path(sim_dir) / "dev"
    names = [f"nvidia{g['index']}" for g in node_gpus(sim_dir)] + ["nvidiactl", "nvidia-uvm"]
    for name in names:
        path = str(dev / name)
        if path not in _held_fds and os.path.exists(path):  # nodes made before nvidia-uvm existed lack it
            _held_fds[path] = os.open(path, os.O_RDONLY)


def hold(sim_dir: Path, mib: dict[int, float], command: str | None = None) -> None:
    """Register the calling process as holding `mib` MiB on each GPU index, and open the device files."""
    sim_dir = Path(sim_dir)
    me = psutil.Process()
    open_device_files(sim_dir)
    record = {
        "pid": me.pid,
        "start": start_of(me.pid),
        "mib": {str(k): float(v) for k, v in mib.items()},
        "command": command or " ".join(me.cmdline()),
    }
    _write_atomic(sim_dir / "holders" / f"{me.pid}.json", record)


def holders(sim_dir: Path) -> list[SimHolder]:
    """Live simulated holders; stale records (dead or reused pids) are dropped from disk."""
    out: list[SimHolder] = []
    folder = Path(sim_dir) / "holders"
    if not folder.is_dir():
        return out
    for path in folder.glob("*.json"):
        try:
            rec = json.loads(path.read_text())
        except (OSError, ValueError):
            continue
        start = rec.get("start", rec.get("create_time"))  # create_time: a node made by an older version
        pid = rec.get("pid")
        if not isinstance(pid, int) or start is None:
            path.unlink(missing_ok=True)
            continue
        if not alive(pid, start) and not hidden(pid):  # a process /proc hides from us (hidepid) holds on,
            path.unlink(missing_ok=True)  # as another user's CUDA process does for the real NVML
            continue
        out.append(SimHolder(rec["pid"], start, {int(k): v for k, v in rec["mib"].items()},
                             rec.get("command", "")))
    return out


def hold_outside(sim_dir: Path, mib: dict[int, float]) -> None:
    """Memory held on each GPU by processes outside this node's view (another container, the host): it
    counts in the used totals and appears in no process list. An empty dict gives it back."""
    _write_atomic(Path(sim_dir) / "outside.json", {str(k): float(v) for k, v in mib.items()})


def outside(sim_dir: Path) -> dict[int, float]:
    try:
        data = json.loads((Path(sim_dir) / "outside.json").read_text())
    except (OSError, ValueError):
        return {}
    return {int(k): float(v) for k, v in data.items()}


def set_activity(sim_dir: Path, util: dict[int, float]) -> None:
    """Record GPU utilisation caused by the calling process (ignored by readers once it is gone)."""
    _write_atomic(Path(sim_dir) / "activity.json",
                  {"pid": os.getpid(), "util": {str(k): v for k, v in util.items()}})


def activity(sim_dir: Path) -> dict[int, float]:
    try:
        data = json.loads((Path(sim_dir) / "activity.json").read_text())
    except (OSError, ValueError):
        return {}
    if not psutil.pid_exists(int(data.get("pid", 0))):
        return {}
    return {int(k): float(v) for k, v in data.get("util", {}).items()}
