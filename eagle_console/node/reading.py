"""The GPU reading, once for every face: the backend's sample, then the holders scanned against it.

The GPUs pane keeps a `GpuReader` open and reads it every second (its fd cache makes a scan reread only new
fds); `gpus`, `orphans`, a kill and a cluster node's agent read once. The sample comes first, so a process
that started in between is only in the fd scan, never only in the backend's lists (node.procs.scan_node).
Which runs' processes count as tracked is the caller's to say (node/tracked.py); ops.gpus says it from the
journal for the faces.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

from eagle_console.node.gpus import GpuBackend, NodeSample, open_backend
from eagle_console.node.procs import Holder, TrackedRun, gpus_document, scan_node

if TYPE_CHECKING:
    from eagle_console.node.fdcache import LinkCache, ScanReuse


class GpuReading(NamedTuple):
    sample: NodeSample
    holders: list[Holder]
    pid_namespace: str = "local"  # "foreign": NVML reports another namespace's pids (LXC, Docker)

    def document(self) -> dict[str, Any]:
        """The `gpus --json` document of cli.md (also what a node's agent sends and the GPUs pane draws)."""
        return gpus_document(self.sample, self.holders, self.pid_namespace)


class GpuReader:
    """An open GPU backend (NVML / sim / none) and its readings; close it, or use it as a context manager."""

    def __init__(self, sim_dir: Path | None, links: LinkCache | None = None, reuse: ScanReuse | None = None) -> None:
        self.backend: GpuBackend = open_backend(sim_dir)
        self.links = links  # a pane's fd-link cache; never a kill's (it must see every fd as it is now)
        self.reuse = reuse  # a pane's kept holder scan (issue 31); never a kill's, for the same reason

    @property
    def name(self) -> str:
        return self.backend.name

    def sample(self) -> NodeSample:
        """The GPUs only (which cluster node this machine is, by their UUIDs)."""
        return self.backend.sample()

    def read(self, tracked: Iterable[TrackedRun] | Callable[[], Iterable[TrackedRun]] = (),
             runs_at: object = None) -> GpuReading:
        """One reading: the sample, then every holder classified against `tracked`. With the reader's `reuse`
        and a `runs_at` (what the tracked runs are read from: the journal's last event id), the last holder
        scan stands while nothing it was made from changed (node/fdcache.ScanReuse), and a callable `tracked`
        is called only when it rescans: with 12,500 runs in the journal, reading them every second was most
        of what a long history cost an idle console (issue 31)."""
        sample = self.backend.sample()
        reuse = self.reuse if runs_at is not None else None
        scan = reuse.get(sample, runs_at) if reuse is not None else None
        if scan is None:
            runs = list(tracked() if callable(tracked) else tracked)
            scan = scan_node(sample, runs, device_prefix=self.backend.device_prefix, links=self.links)
            if reuse is not None:
                reuse.put(sample, runs_at, scan)
        return GpuReading(sample, scan.holders, scan.pid_namespace)

    def close(self) -> None:
        self.backend.close()

    def __enter__(self) -> GpuReader:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()


def read_once(sim_dir: Path | None, tracked: Iterable[TrackedRun] = ()) -> GpuReading:
    with GpuReader(sim_dir) as reader:
        return reader.read(tracked)


def sample_once(sim_dir: Path | None) -> NodeSample:
    with GpuReader(sim_dir) as reader:
        return reader.sample()
