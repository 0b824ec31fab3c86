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
