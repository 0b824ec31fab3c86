"""The backend for a machine with no usable NVIDIA driver: no GPUs, and the reason why."""

from __future__ import annotations

from eagle_console.node.gpus import NodeSample


class NoneBackend:
    name = "none"
    device_prefix = "/dev/nvidia"  # still scanned: a broken driver can leave holders of the device files

    def __init__(self, reason: str) -> None:
        self.reason = reason

    def sample(self) -> NodeSample:
        return NodeSample(backend="none", driver=None, error=self.reason, gpus=[])

    def close(self) -> None:
        pass
