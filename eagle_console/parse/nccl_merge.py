"""One NCCL diagnosis from the logs of several nodes (one log per rank/node of a multi-node server).

`merge_nccl([(node, lines), ...])` feeds every node's lines to one `NcclParser`, each under its node's
name (so two nodes whose processes call themselves by the same host name stay apart), and returns the
`nccl --json` summary plus `nnodes` (NCCL's own `nNodes`) and `node_ranks` (node → the ranks its log
holds). Connections between nodes are NET by nature; `NET_SOCKET_INTER_NODE` says when they go over TCP
sockets rather than InfiniBand/RoCE (`via NET/Socket/N`: nccl src/transport/net.cc), the usual reason a
2-node server is slow.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from eagle_console.findings import Finding
from eagle_console.parse.nccl import NcclParser


def merge_nccl(logs: Sequence[tuple[str, Iterable[str]]], **live: Any) -> dict[str, Any]:
    """The merged summary of several nodes' logs: `nccl --json`'s keys, `nnodes` and `node_ranks`."""
    parser = NcclParser()
    for node, lines in logs:
        feed_node(parser, node, lines)
    return merged_summary(parser, [node for node, _ in logs], **live)


def feed_node(parser: NcclParser, node: str, lines: Iterable[str]) -> None:
    """Feed one node's lines under its name (a follower feeds each node's new lines as they come)."""
    parser.node = node
    try:
        parser.feed(lines)
    finally:
        parser.node = None


def merged_summary(parser: NcclParser, nodes: Sequence[str], **live: Any) -> dict[str, Any]:
    """The summary of a parser fed by `feed_node` for each of `nodes`."""
    summary: dict[str, Any] = dict(parser.summary(**live))
    host_node = {h: _node_of(parser, h) for h in parser.hosts}
    node_ranks: dict[str, list[int]] = {node: [] for node in nodes}
    for rank, host in sorted(parser._rank_host.items()):
        node = host_node.get(host)
        if node in node_ranks:
            node_ranks[node].append(rank)
    summary["nnodes"] = max(parser._nnodes) if parser._nnodes else None
    summary["node_ranks"] = node_ranks
    extra = _inter_node_findings(parser, host_node, summary["nnodes"], len(node_ranks))
    summary["findings"] = summary["findings"] + [f.to_json() for f in extra]
    return summary


def _node_of(parser: NcclParser, host: str) -> str | None:
    """The node whose log a (possibly qualified, `host@node`) host name came from."""
    if host in parser._host_node:
        return parser._host_node[host]
    return host.rsplit("@", 1)[1] if "@" in host else None


def _inter_node_findings(parser: NcclParser, host_node: dict[str, str], nnodes: int | None,
                         logs: int) -> list[Finding]:
    out: list[Finding] = []
    socket_pairs = set()
    for c in parser._conns:
        a, b = parser._rank_host.get(c.src), parser._rank_host.get(c.dst)
        if a is None or b is None or host_node.get(a) == host_node.get(b):
            continue
        if c.transport == "NET" and "NET/Socket" in c.detail:
            socket_pairs.add((c.src, c.dst))
    if socket_pairs:
        shown = ", ".join(f"{a}→{b}" for a, b in sorted(socket_pairs)[:12]) + (" …" if len(socket_pairs) > 12 else "")
        out.append(Finding("warning", "NET_SOCKET_INTER_NODE",
                           f"{len(socket_pairs)} connection(s) between nodes go over TCP sockets (NET/Socket): "
                           f"{shown}. Expect a fraction of InfiniBand/RoCE bandwidth; if the nodes have IB, "
                           "check `NET/IB : No device found` and NCCL_IB_HCA / NCCL_SOCKET_IFNAME."))
    if nnodes is not None and nnodes > logs:
        out.append(Finding("warning", "NODES_MISSING",
                           f"NCCL counts {nnodes} nodes but only {logs} node log(s) were given: the other "
                           "nodes' ranks are not in this diagnosis (pass every node's log)."))
    return out
