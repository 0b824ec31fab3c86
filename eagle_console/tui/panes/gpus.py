"""The GPUs pane. Issue 2 gives it its frame only; the GPU table and holders arrive with issue 4."""

from __future__ import annotations

from textual.widgets import Static


class GpuPane(Static):
    BORDER_TITLE = "GPUs"

    def __init__(self, **kwargs) -> None:
        super().__init__("GPU pane arrives with issue 4 (GPUs and orphan killing)", **kwargs)
