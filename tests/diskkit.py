"""A real small disk for full-disk tests: a tmpfs of a few MiB (root only), filled up on demand."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest


def mount_tmpfs(where: Path, request, size: str = "4m", mode: str | None = None) -> Path:
    """Mount a tmpfs of `size` at `where` (skipped without root or where mount is not allowed)."""
    if os.geteuid() != 0:
        pytest.skip("mounting a tmpfs needs root")
    where.mkdir(parents=True, exist_ok=True)
    options = f"size={size}" + (f",mode={mode}" if mode else "")
    if subprocess.run(["mount", "-t", "tmpfs", "-o", options, "tmpfs", str(where)],
                      capture_output=True).returncode != 0:
        pytest.skip("mount is not allowed here (a container without CAP_SYS_ADMIN)")
    request.addfinalizer(lambda: subprocess.run(["umount", "-l", str(where)], capture_output=True))
    return where


def fill(where: Path) -> None:
    """Write zeros into `where/filler` until the disk refuses: nothing more fits on it."""
    with open(where / "filler", "wb") as f:
        try:
            while True:
                f.write(b"\0" * 65536)
                f.flush()
        except OSError:
            pass
