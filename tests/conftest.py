"""Shared test setup. Test modules are named by area: test_plan_*, test_journal_*, test_engine_*, ..."""

from __future__ import annotations

import os
import socket
import sys
from pathlib import Path

import pytest
import reaperkit

# the session's one Ray cluster (tests/test_cluster_*.py), per-test CPU, the workers' bytecode made once
pytest_plugins = ["clusterkit", "cpukit", "warmkit"]

REPO = Path(__file__).resolve().parent.parent
DATA = Path(__file__).resolve().parent / "data"

# Child processes (supervisors, sim servers) must import this checkout's package.
os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")]))
os.environ.setdefault("EAGLE_CONSOLE_DEBUG", "")

# Bytecode is cached, as an installed package has it. With PYTHONDONTWRITEBYTECODE=1 (this VM's shells set it)
# every process the suite starts (CLI runs, supervisors, sims, Ray workers) compiled this checkout's modules
# again (~80 ms CPU each: `status --help` 0.17 -> 0.09 s), and every xdist worker rewrote every test module's
# asserts (collection 7.9 -> 2.4 s CPU a worker). The .pyc go next to the sources, in git-ignored __pycache__
# folders (site-packages has its own from pip). Set here: before the xdist workers and the test modules start.
if os.environ.pop("PYTHONDONTWRITEBYTECODE", None) is not None:
    sys.dont_write_bytecode = False


def pytest_configure(config: pytest.Config) -> None:
    """Orphans (detached supervisors, killed servers' workers) come to the process that runs the tests and are
    reaped at once, not when PID 1 gets to them: every wait for a killed process to be gone was that much
    longer (tests/reaperkit.py). Not xdist's controller, which runs none: as a subreaper it adopted what a
    worker let go to PID 1 on purpose (tmux's server, and so the orphans of a job in its terminal)."""
    if os.environ.get("PYTEST_XDIST_WORKER") or not getattr(config.option, "numprocesses", None):
        reaperkit.become_subreaper()
        _remember_drafter_tensors()
        worker, count = os.environ.get("PYTEST_XDIST_WORKER"), os.environ.get("PYTEST_XDIST_WORKER_COUNT")
        ports = worker_ports(worker, count)
        os.environ.setdefault("EAGLE_CONSOLE_PORTS", ports)


def worker_ports(worker: str | None, count: str | None) -> str:
    """A slice of free_port's default range (20000 up to the kernel's 32768) of its own for each xdist
    worker, and for what it starts (servers, CLI processes, a local Ray cluster's nodes inherit it): a port
    one worker drew and had not bound yet was drawn by another, and a simulated server failed with "Address
    already in use" (a README run: test_metrics_sim, its server's port 30296). The whole range without
    xdist."""
    from eagle_console.ports import FLOOR

    low, high = FLOOR, 32767  # free_port's floor, up to Linux's default ephemeral range (ports.py)
    if not worker or not count:
        return f"{low}-{high}"
    n, i = max(1, int(count)), int(worker.removeprefix("gw"))
    size = (high - low + 1) // n
    return f"{low + i * size}-{low + (i + 1) * size - 1}"


def bound(port: int) -> socket.socket:
    """A socket bound to 127.0.0.1:port the way the servers free_port picks for bind (SO_REUSEADDR: a port
    in TIME_WAIT after its last server is theirs to take). A bare bind is refused such a port: the suite's
    own servers leave many, and test_ports' check of a pick with one failed (a README run, 20000-20060)."""
    s = socket.socket()
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        s.bind(("127.0.0.1", port))
    except BaseException:
        s.close()
        raise
    return s


def _remember_drafter_tensors() -> None:
    """The demo's drafter weights are random normals from a fixed seed (eagle_console/sim/drafters.py): the
    same arrays for the same config, target ids and seed. A test process makes each set once instead of in
    every test that builds a demo or a drafter (py-spy: ~7 % of the workers' samples). The arrays are made
    read-only, so a test that edited one in place would fail instead of changing another test's drafter;
    each call gets a dict of its own (callers drop keys). A CLI process (`demo`) still makes its own."""
    import json

    from eagle_console.sim import drafters

    made: dict[tuple[str, bytes, int], dict] = {}
    make = drafters.draft_tensors

    def draft_tensors(cfg: dict, target_ids, seed: int = 0) -> dict:  # noqa: ANN001 (an id list or array)
        import numpy as np

        key = (json.dumps(cfg, sort_keys=True), np.asarray(target_ids, dtype=np.int64).tobytes(), seed)
        if key not in made:
            made[key] = make(cfg, target_ids, seed)
            for value in made[key].values():
                (value[0] if isinstance(value, tuple) else value).flags.writeable = False
        return dict(made[key])

    drafters.draft_tensors = draft_tensors


# --- pytest-xdist: `pytest -n auto` (the README's command) ---------------------------------------------------
# Tests run in parallel except where they share something; `--dist loadgroup` (pyproject addopts) keeps each
# xdist group on one worker:
#   ray             the tests on the session's Ray cluster (the `ray_cluster` fixture, tests/clusterkit.py): one
#                   worker starts it once, as a serial run does
#   netns-MODULE    each two-host module (marker `netns`, tests/netnskit.py) builds its own hosts and cluster
#                   for the module: one worker per module, and modules beside each other
#   tmux            the real-terminal tests (tests/e2e): key timing on a busy machine (each Term has a tmux server of its own: tests/tmuxkit.py)
#   module-MODULE   the tests of a module-scoped fixture (a venv built, a sim server started): built once
# Markers `ray`, `netns` and `tmux` are set here from the same rules, so `-m "not tmux"` needs no file list.

# Handed out first (`--no-loadscope-reorder` keeps this order): the groups that wait longest, so none of them
# starts late and ends the run alone; then the other groups, then every other test in file order.
LONGEST_FIRST = ("netns-test_cluster_long_faults", "netns-test_cluster_faults", "ray", "netns-test_cluster_blip",
                 "tmux")


def xdist_group(item: pytest.Item) -> str | None:
    if item.get_closest_marker("netns"):
        return f"netns-{item.path.stem}"
    if "ray_cluster" in getattr(item, "fixturenames", ()):
        return "ray"
    if item.path.parent.name == "e2e":
        return "tmux"
    info = getattr(item, "_fixtureinfo", None)
    if info is not None and any(d.scope == "module" for defs in info.name2fixturedefs.values() for d in defs):
        return f"module-{item.path.stem}"
    return None


def _handed_out(group: str | None) -> int:
    if group in LONGEST_FIRST:
        return LONGEST_FIRST.index(group)
    return len(LONGEST_FIRST) + (0 if group else 1)


@pytest.hookimpl(tryfirst=True)  # before xdist's own hook reads the xdist_group markers
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    groups: dict[pytest.Item, str | None] = {}
    for item in items:
        given = item.get_closest_marker("xdist_group")  # a module's own choice stands
        group = groups[item] = (given.args[0] if given.args else given.kwargs.get("name")) if given else xdist_group(item)
        if group is None or given:
            continue
        item.add_marker(pytest.mark.xdist_group(group))
        kind = group.partition("-")[0]
        if kind in ("ray", "netns", "tmux"):
            item.add_marker(kind)
    if os.environ.get("PYTEST_XDIST_WORKER"):  # a serial run keeps file order
        items.sort(key=lambda item: _handed_out(groups[item]))  # stable: a module's tests keep their order


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
        if names and not item.nodeid.endswith(suffix) and item._id.rest is not None:
            # one name holding the rest (params too), so the id reads NODEID@GROUP however it is rebuilt
            item._id = NodeId(path=item._id.path, names=(item._id.rest + suffix,))


@pytest.hookimpl(tryfirst=True)  # before xdist's own (firstresult)
def pytest_xdist_make_scheduler(config: pytest.Config, log):
    """xdist's loadgroup scheduler, except that a worker still in a group is topped up with a lone test,
    never with the next group; a worker running lone tests takes the next group as xdist does. xdist tops a
    worker up once it has two tests or fewer to go (it runs a test only once it holds the next one), whatever
    the next unit is: the two-host module of two ~2 min tests got the next group queued behind it, which
    started minutes late and ended the run alone."""
    if config.getvalue("dist") != "loadgroup":
        return None
    from xdist.scheduler import LoadGroupScheduling

    if not all(hasattr(LoadGroupScheduling, a) for a in ("_reschedule", "_pending_of")):
        return None  # another xdist: its own scheduling, only less well packed

    class LoneTestsToBusyWorkers(LoadGroupScheduling):
        # a work unit's scope is its group's name, or a lone test's node id (which has "::")
        def _reschedule(self, node) -> None:
            queue = self.workqueue
            in_group = any("::" not in scope and not all(done.values())
                           for scope, done in self.assigned_work[node].items())
            if queue and in_group and "::" not in next(iter(queue)):
                lone = next((scope for scope in queue if "::" in scope), None)
                if lone is not None:
                    queue.move_to_end(lone, last=False)  # the group waits for a worker out of its group
            super()._reschedule(node)

    return LoneTestsToBusyWorkers(config, log)


def pytest_xdist_auto_num_workers(config: pytest.Config) -> int:
    """`-n auto`: more workers than cores, since most of a test's time is spent waiting on processes it
    started (sim start-ups, Ray, a kill's grace), not computing. PYTEST_XDIST_AUTO_NUM_WORKERS overrides."""
    given = os.environ.get("PYTEST_XDIST_AUTO_NUM_WORKERS", "")
    if given.isdigit() and int(given) > 0:
        return int(given)
    return min(MAX_WORKERS, WORKERS_PER_CORE * (os.cpu_count() or 1))


# Three per core: the Ray and two-host groups hold four workers from the start while they mostly wait on Ray's
# timeouts; with four workers on 2 cores the cores were idle 82-88 s of a ~320 s run, with six 14-16 s of a
# 270-296 s one (docs/packaging.md). More than MAX_WORKERS only adds idle interpreters (and their memory).
WORKERS_PER_CORE = 3
MAX_WORKERS = 16


@pytest.fixture
def python() -> str:
    return sys.executable


@pytest.fixture
def small_disk(tmp_path, request) -> Path:
    """A real 4 MiB tmpfs (root only; skipped where mount is not allowed), for full-disk tests (diskkit.fill)."""
    from diskkit import mount_tmpfs

    return mount_tmpfs(tmp_path / "mnt", request)


@pytest.fixture
def held_run(tmp_path, monkeypatch):
    """(plan, sim dir, worker pid): a live run holding GPU memory on a simulated node (heldkit)."""
    from heldkit import start_held_run, stop_held_run

    monkeypatch.delenv("EAGLE_CONSOLE_GPU_BACKEND", raising=False)
    monkeypatch.setenv("EAGLE_CONSOLE_KILL_GRACE", "1")
    plan, sim, worker = start_held_run(tmp_path)
    yield plan, sim, worker
    stop_held_run(plan, worker)
