"""A local cluster's stop (cluster/local.py, what `demo --nodes` and the tests' clusters end with): each node's
`ray start` takes its node down, the other nodes before the head, and nothing is left to SIGKILL. The cluster
is the one the `ray` group's tests used (their jobs, agents and drivers ran on it), taken over at its end."""

from __future__ import annotations

import contextlib
import shutil

import psutil
from clusterkit import needs_ray, take_shared_cluster

from eagle_console.processes import alive, open_live


@needs_ray
def test_stop_has_each_ray_start_take_its_node_down_and_kills_nothing(ray_cluster, monkeypatch):
    """Before: SIGTERM to every Ray process at once; the raylets and the GCS waited on each other (none gone
    15 s later), so every stop ended in SIGKILL after its 5 s grace (8 processes of a two-node cluster)."""
    cluster = take_shared_cluster(ray_cluster)
    sigkilled: list[str] = []
    kill = psutil.Process.kill

    def seen(self):  # noqa: ANN001, ANN202 - psutil's own signature
        sigkilled.append(f"{self.pid} {' '.join(self.cmdline())[:80]}")
        return kill(self)

    try:
        procs = live(cluster.pids())
        assert {"raylet", "gcs_server"} <= {p.name() for p in procs}
        monkeypatch.setattr(psutil.Process, "kill", seen)
        killed = cluster.stop()
    finally:
        cluster.stop()
        shutil.rmtree(cluster.root, ignore_errors=True)
    assert sigkilled == []
    assert killed == []
    assert [p.pid for p in procs if alive(p.pid, p.create_time())] == []


def live(pids: list[int]) -> list[psutil.Process]:
    """The processes of `pids` still there: a Ray worker may end between the listing and the look (a race that
    failed this test once). Each keeps its create time: a reused pid is not taken for one of them later."""
    procs = []
    for proc in open_live(pids):
        with contextlib.suppress(psutil.NoSuchProcess):
            proc.name()  # cached now: asked again after the stop, it would fail for a process gone
            procs.append(proc)
    return procs

