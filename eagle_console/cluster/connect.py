"""Joining the Ray cluster as a driver, and the nodes it has (GCS's node table, ray.nodes()).

We never start a cluster or a dashboard here: `ray.init(address=...)` only connects to one the operator
started with `ray start` on each node (docs/cluster.md).
"""

from __future__ import annotations

import contextlib
import logging
import os
import sys
import threading
from collections.abc import Iterator
from typing import NamedTuple

from eagle_console.cluster import NAMESPACE, node_names

_lock = threading.Lock()


class ClusterNode(NamedTuple):
    name: str  # from the raylet's eagle-node:NAME resource
    node_id: str
    address: str  # the raylet's IP
    alive: bool  # as the GCS sees it (its health check lags a killed raylet by seconds)


class ClusterError(Exception):
    """The cluster cannot be reached (no head at the address, Ray not installed)."""


def connect(address: str) -> None:
    """Connect this process to the cluster at `address` once; later calls reuse the connection."""
    try:
        import ray
    except ImportError as exc:
        raise ClusterError("Ray is not installed: pip install 'eagle-console[cluster]'") from exc
    with _lock:
        if ray.is_initialized():
            return
        os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")  # no usage report from the console
        try:
            # log_to_driver=False: the workers' output (our agents) is not the operator's terminal's.
            with _real_std_streams():
                ray.init(address=address, namespace=NAMESPACE, include_dashboard=False, log_to_driver=False,
                         logging_level=logging.ERROR, configure_logging=False)
        except (ConnectionError, RuntimeError, ValueError) as exc:
            raise ClusterError(f"cannot reach the Ray cluster at {address}: {exc}") from exc
        _cluster_messages_to_stderr()


@contextlib.contextmanager
def _real_std_streams() -> Iterator[None]:
    """ray.init hands sys.stderr's file descriptor to faulthandler; inside the console Textual has replaced
    sys.stdout/stderr with objects whose fileno() is -1, and ray.init failed ("file.fileno() is not a valid
    file descriptor"): the console never read a node. The process's real streams stand in during the call."""
    saved = sys.stdout, sys.stderr
    real = [s for s in (sys.__stdout__, sys.__stderr__) if s is not None]
    try:
        if any(_bad_fileno(s) for s in saved) and len(real) == 2:
            sys.stdout, sys.stderr = real
        yield
    finally:
        sys.stdout, sys.stderr = saved


def _bad_fileno(stream: object) -> bool:
    try:
        return stream.fileno() < 0  # type: ignore[attr-defined]
    except (AttributeError, OSError, ValueError):
        return False  # no fileno at all: Ray copes with that (checked with a StringIO)


def _cluster_messages_to_stderr() -> None:
    """Ray's driver prints the cluster's error messages ("(raylet) Raylet is terminated...") on stdout
    (ray/_private/worker.py listen_error_messages, is_err=False): that would break `--json` documents.
    They go to stderr instead (the module attribute is looked up at each call)."""
    from ray._private import worker

    original = worker.print_to_stdstream
    if getattr(original, "_eagle_console", False):
        return

    def to_stderr(data: dict, ignore_prefix: bool) -> None:
        original({**data, "is_err": True}, ignore_prefix)

    to_stderr._eagle_console = True  # type: ignore[attr-defined]
    worker.print_to_stdstream = to_stderr


def cluster_nodes(address: str) -> list[ClusterNode]:
    """Every node that carries an eagle-node:NAME resource, dead ones included (the GCS keeps them)."""
    import ray

    connect(address)
    out: dict[str, ClusterNode] = {}
    for n in ray.nodes():
        for name in node_names(n.get("Resources") or {}):
            node = ClusterNode(name, n["NodeID"], n.get("NodeManagerAddress", "?"), bool(n.get("Alive")))
            # a restarted raylet reuses its name: the live entry wins over the dead one
            if name not in out or (node.alive and not out[name].alive):
                out[name] = node
    return sorted(out.values())


def unknown_nodes(address: str, wanted: list[str]) -> list[str]:
    """The names in `wanted` no live raylet carries; raises ClusterError when the cluster is unreachable."""
    alive = {n.name for n in cluster_nodes(address) if n.alive}
    return [w for w in wanted if w not in alive]
