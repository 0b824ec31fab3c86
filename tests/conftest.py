"""Shared test setup. Test modules are named by area: test_plan_*, test_journal_*, test_engine_*, ..."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest
import reaperkit

pytest_plugins = ["clusterkit"]  # the session's one Ray cluster (tests/test_cluster_*.py)

REPO = Path(__file__).resolve().parent.parent
DATA = Path(__file__).resolve().parent / "data"

# Child processes (supervisors, sim servers) must import this checkout's package.
os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")]))
os.environ.setdefault("EAGLE_CONSOLE_DEBUG", "")
# Orphans (detached supervisors, killed servers' workers) come to this process and are reaped at once, not
# when PID 1 gets to them: every wait for a killed process to be gone was that much longer (tests/reaperkit.py).
reaperkit.become_subreaper()


# --- pytest-xdist: `pytest -n auto` (the README's command) ---------------------------------------------------
# Tests run in parallel except where they share something; `--dist loadgroup` (pyproject addopts) keeps each
# xdist group on one worker:
#   ray           every test on the session's Ray cluster (the `ray_cluster` fixture, tests/clusterkit.py): one
#                 worker starts it once, as a serial run does
#   netns-MODULE  each two-host module (marker `netns`, tests/netnskit.py) builds its own hosts and cluster
#                 for the module: one worker per module, and modules beside each other
#   tmux          the real-terminal tests (tests/e2e): key timing on a busy machine; they share tmux's server
# Markers `ray` and `tmux` are set here from the same rules, so `-m "not tmux"` needs no list of files.


def xdist_group(item: pytest.Item) -> str | None:
    if item.get_closest_marker("netns"):
        return f"netns-{item.path.stem}"
    if "ray_cluster" in getattr(item, "fixturenames", ()):
        return "ray"
    if item.path.parent.name == "e2e":
        return "tmux"
    return None


@pytest.hookimpl(tryfirst=True)  # before xdist's own hook reads the xdist_group markers
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        group = xdist_group(item)
        if group is None or item.get_closest_marker("xdist_group"):
            continue
        item.add_marker(pytest.mark.xdist_group(group))
        if group in ("ray", "tmux"):
            item.add_marker(group)


@pytest.hookimpl(tryfirst=True)  # before xdist's worker sends the collected node ids to the scheduler
def pytest_collection_finish(session: pytest.Session) -> None:
    """pytest-xdist 3.8 names a grouped test `NODEID@GROUP` (what its scheduler groups by) by writing
    `item._nodeid`, which pytest 9.2's structured node ids no longer read (pytest-xdist#1386): every group
    was spread over all workers, each starting its own Ray cluster. Done here the way its proposed fix does
    it, only where xdist's own naming did not take."""
    if not getattr(session.config.option, "loadgroup", False):  # set on xdist workers under loadgroup
        return
    try:
        from _pytest.nodeid import NodeId  # pytest >= 9.2; before it xdist's `_nodeid` works
    except ImportError:
        return
    for item in session.items:
        names = sorted({str(m.args[0] if m.args else m.kwargs.get("name", "default"))
                        for m in item.iter_markers("xdist_group")})
        suffix = f"@{'_'.join(names)}"
        if names and not item.nodeid.endswith(suffix):
            item._id = NodeId.parse(item.nodeid + suffix)


def pytest_xdist_auto_num_workers(config: pytest.Config) -> int:
    """`-n auto`: more workers than cores, since most of a test's time is spent waiting on processes it
    started (sim start-ups, Ray, a kill's grace), not computing. PYTEST_XDIST_AUTO_NUM_WORKERS overrides."""
    given = os.environ.get("PYTEST_XDIST_AUTO_NUM_WORKERS", "")
    if given.isdigit() and int(given) > 0:
        return int(given)
    return WORKERS_PER_CORE * (os.cpu_count() or 1)


WORKERS_PER_CORE = 2


@pytest.fixture
def python() -> str:
    return sys.executable


@pytest.fixture
def small_disk(tmp_path, request) -> Path:
    """A real 4 MiB tmpfs (root only; skipped where mount is not allowed), for full-disk tests (diskkit.fill)."""
    from diskkit import mount_tmpfs

    return mount_tmpfs(tmp_path / "mnt", request)
