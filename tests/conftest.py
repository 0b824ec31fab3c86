"""Shared test setup. Test modules are named by area: test_plan_*, test_journal_*, test_engine_*, ..."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

pytest_plugins = ["clusterkit"]  # the session's one Ray cluster (tests/test_cluster_*.py)

REPO = Path(__file__).resolve().parent.parent
DATA = Path(__file__).resolve().parent / "data"

# Child processes (supervisors, sim servers) must import this checkout's package.
os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")]))
os.environ.setdefault("EAGLE_CONSOLE_DEBUG", "")


@pytest.fixture
def python() -> str:
    return sys.executable


@pytest.fixture
def small_disk(tmp_path, request) -> Path:
    """A real 4 MiB tmpfs (root only; skipped where mount is not allowed), for full-disk tests (diskkit.fill)."""
    from diskkit import mount_tmpfs

    return mount_tmpfs(tmp_path / "mnt", request)
