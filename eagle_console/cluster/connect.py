"""The cluster's nodes (the GCS's node table), asked through the out-of-process driver (cluster/link.py).

We never start a cluster or a dashboard here, and this process never imports Ray: `connect(address)` starts
a driver process that only connects (`ray.init(address=...)`) to a cluster the operator started with
`ray start` on each node (docs/cluster.md), and every question to it has a deadline.
"""

from __future__ import annotations

from typing import NamedTuple

from eagle_console.cluster.link import ClusterError, HeadUnreachable, RemoteError, head_down
from eagle_console.cluster.link import call as _call
from eagle_console.cluster.link import connect as _connect

__all__ = ["ClusterError", "ClusterNode", "HeadUnreachable", "RemoteError", "ask_agent", "ask_agents",
           "cluster_nodes", "connect", "head_down", "unknown_nodes"]

NODES_S = 5.0  # the GCS's node table: a head that does not answer within this is unreachable


class ClusterNode(NamedTuple):
    name: str  # from the raylet's eagle-node:NAME resource
    node_id: str
    address: str  # the raylet's IP
    alive: bool  # as the GCS sees it (its health check lags a killed raylet by seconds)


def connect(address: str) -> None:
    """The driver process of `address` connected (started on first use; later calls reuse it)."""
    _connect(address)


def cluster_nodes(address: str, timeout: float = NODES_S) -> list[ClusterNode]:
    """Every node that carries an eagle-node:NAME resource, dead ones included (the GCS keeps them)."""
    out: dict[str, ClusterNode] = {}
    for row in _call(address, "nodes", timeout, gcs=True):
        node = ClusterNode(*row)
        # a restarted raylet reuses its name: the live entry wins over the dead one
        if node.name not in out or (node.alive and not out[node.name].alive):
            out[node.name] = node
    return sorted(out.values())


def unknown_nodes(address: str, wanted: list[str]) -> list[str]:
    """The names in `wanted` no live raylet carries; raises ClusterError when the cluster is unreachable."""
    alive = {n.name for n in cluster_nodes(address) if n.alive}
    return [w for w in wanted if w not in alive]


def ask_agent(address: str, node: str, method: str, *args: object, timeout: float) -> object:
    """One call on `node`'s NodeAgent (cluster/agent.py); RemoteError says what Ray raised there (its `kinds`:
    GetTimeoutError, RayActorError, ActorUnavailableError, ...)."""
    return _call(address, "agent", timeout, node=node, method=method, args=list(args))


AGENT_START_S = 15.0  # an agent a question has to start first: a new Ray worker on its node


def ask_agents(address: str, calls: dict[str, tuple[str, list]], timeout: float,
               start_s: float = AGENT_START_S) -> dict[str, dict]:
    """The same kind of question to several agents at once: node -> {"ok": value} | {"error", "kinds"}.
    A running agent has `timeout` to answer; one not running yet (the cluster just started, the agent's
    node just came back) has `timeout + start_s`, its start included: slow to start is not unreachable."""
    return _call(address, "agents", timeout + start_s, calls={n: [m, list(a)] for n, (m, a) in calls.items()},
                 answer_s=timeout)
