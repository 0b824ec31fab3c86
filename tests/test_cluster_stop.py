"""A local cluster's stop (cluster/local.py, what `demo --nodes` and the tests' clusters end with): each node's
`ray start` takes its node down, the other nodes before the head, and nothing is left to SIGKILL."""

from __future__ import annotations

import psutil
from clusterkit import needs_ray, start_retrying


@needs_ray
def test_stop_has_each_ray_start_take_its_node_down_and_kills_nothing(tmp_path, monkeypatch):
    """Before: SIGTERM to every Ray process at once; the raylets and the GCS waited on each other (none gone
    15 s later), so every stop ended in SIGKILL after its 5 s grace (8 processes of this cluster)."""
    from eagle_console.cluster import start_local_cluster

    cluster = start_retrying(lambda: start_local_cluster(tmp_path, {"a": None, "b": None}))
    sigkilled: list[str] = []
    kill = psutil.Process.kill

    def seen(self):  # noqa: ANN001, ANN202 - psutil's own signature
        sigkilled.append(f"{self.pid} {' '.join(self.cmdline())[:80]}")
        return kill(self)

    try:
        pids = cluster.pids()
        assert {"raylet", "gcs_server"} <= {psutil.Process(pid).name() for pid in pids}
        monkeypatch.setattr(psutil.Process, "kill", seen)
        killed = cluster.stop()
    finally:
        cluster.stop()
    assert sigkilled == []
    assert killed == []
    left = [pid for pid in pids if psutil.pid_exists(pid) and psutil.Process(pid).status() != psutil.STATUS_ZOMBIE]
    assert left == []
