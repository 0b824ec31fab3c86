"""Ray's Prometheus endpoints answer without the token (node IPs, resources, session name): the local cluster
(cluster/local.py) starts none on a non-loopback address but the head dashboard's own, which Ray gives no
way to bind or turn off (docs/cluster.md, Security). Real local cluster (clusterkit)."""

from __future__ import annotations

import ipaddress
import urllib.request

import psutil
from clusterkit import needs_ray

pytestmark = needs_ray


def _open_to_the_network(cluster) -> dict[int, str]:
    """port -> the command of the cluster's process that serves Prometheus metrics there, bound to an address
    other hosts can reach (0.0.0.0, ::, a routable IP)."""
    ours = set(cluster.pids())
    found: dict[int, str] = {}
    for conn in psutil.net_connections("tcp"):
        if conn.status != psutil.CONN_LISTEN or conn.pid not in ours:
            continue
        bound = ipaddress.ip_address(conn.laddr.ip.removeprefix("::ffff:"))
        if bound.is_loopback:
            continue
        host = "127.0.0.1" if bound.is_unspecified else (f"[{bound}]" if bound.version == 6 else str(bound))
        try:  # a gRPC port answers HTTP/1.1 with an error or garbage: not Prometheus text
            with urllib.request.urlopen(f"http://{host}:{conn.laddr.port}/metrics", timeout=3) as reply:
                body = reply.read(1 << 20).decode(errors="replace")
        except Exception:  # noqa: BLE001
            continue
        if "SessionName=" in body:
            found[conn.laddr.port] = " ".join(psutil.Process(conn.pid).cmdline())
    return found


def test_no_node_exports_prometheus_metrics_to_the_network(ray_cluster):
    open_ports = _open_to_the_network(ray_cluster)
    # the one Ray cannot be told to bind elsewhere nor to leave out: the dashboard's own (event loop, CPU)
    others = {port: cmd for port, cmd in open_ports.items() if "ray/dashboard/dashboard.py" not in cmd}
    assert others == {}, others
