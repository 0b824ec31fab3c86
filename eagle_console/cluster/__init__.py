"""Several nodes on Ray (issue #20, docs/cluster.md): the plan's `[cluster]` and a step's `node`.

A node is named by a custom resource its raylet was started with (`ray start --resources
'{"eagle-node:b": 1}'`). This module only names things; `connect`, `agent` and `jobs` import Ray, and
nothing imports them unless a plan has `[cluster]` (single-node use never loads Ray).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

NAMESPACE = "eagle-console"
RESOURCE_PREFIX = "eagle-node:"
# A sliver of the node's resource: pins an actor or job to the node without using up its slot.
PIN_AMOUNT = 0.001


def node_resource(name: str) -> str:
    return f"{RESOURCE_PREFIX}{name}"


def pin(name: str) -> dict[str, float]:
    """The resources that place an actor or a job's entrypoint on node `name`."""
    return {node_resource(name): PIN_AMOUNT}


def node_names(resources: Mapping[str, float]) -> list[str]:
    """The eagle-console names a raylet's resources give it (normally one)."""
    return sorted(k[len(RESOURCE_PREFIX):] for k in resources if k.startswith(RESOURCE_PREFIX))


def __getattr__(name: str) -> Any:
    """`start_local_cluster` / `LocalCluster` on first use: importing this package never imports Ray."""
    if name in ("start_local_cluster", "LocalCluster"):
        from eagle_console.cluster import local

        return getattr(local, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
