"""Multi-node `sglang.server`: one rank per node, its command line, and the checks before launch. Pure.

`with.nodes = ["a", "b"]` launches `--nnodes 2` ranks: node i gets `--node-rank i` and every rank the same
`--dist-init-addr HOST:PORT`, rank 0's address (SGLang's server_args.py: `dist_init_addr`, alias
`--nccl-init-addr`, "the host address for initializing distributed backend (e.g. 192.168.0.2:25000)"; the
scheduler turns it into `tcp://HOST:PORT` for torch.distributed). `--tp-size` is the total over all nodes:
each node runs tp/nnodes schedulers (engine.py `_launch_scheduler_processes`), so tp must divide evenly.
Only rank 0 serves the API; readiness is asked of rank 0 alone.

Before launch (`preflight`): the model and drafter paths exist on every node, and NCCL_SOCKET_IFNAME /
GLOO_SOCKET_IFNAME are set where a node has several candidate interfaces: with more than one, NCCL and
Gloo may each pick another one and the bootstrap hangs at init (sglang#958, sglang#3226); and where they are
set, each names an interface the node has (`NCCL_SOCKET_IFNAME="eth0"` on a host whose interface is `ens5`:
NCCL finds no socket interface and every rank fails at init), matched the way NCCL and Gloo match them.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from eagle_console.findings import Finding

MULTINODE_KEYS = ("nodes", "dist_port")
DEFAULT_DIST_PORT = 20000  # the port SGLang's multi-node docs use for --dist-init-addr
IFNAME_VARS = ("NCCL_SOCKET_IFNAME", "GLOO_SOCKET_IFNAME")
# NCCL's default NCCL_SOCKET_IFNAME is `^docker,lo`: those never compete for the bootstrap.
_NOT_CANDIDATES = ("lo", "docker")


@dataclass(frozen=True)
class RankLaunch:
    node: str
    rank: int
    argv: list[str]


@dataclass(frozen=True)
class NodeFacts:
    """What the preflight needs to know about one node (gathered through a NodeRunner)."""

    node: str
    missing: tuple[str, ...]  # the model/drafter paths not found there
    interfaces: tuple[str, ...]  # its interfaces that are up
    env: Mapping[str, str]  # the environment a rank started there gets


def is_multinode(args: Mapping[str, Any]) -> bool:
    return "nodes" in args


def node_names(args: Mapping[str, Any]) -> list[str]:
    """`with.nodes`, checked: a list of two or more distinct non-empty names (ValueError otherwise)."""
    nodes = args.get("nodes")
    if not isinstance(nodes, list) or not all(isinstance(n, str) and n for n in nodes):
        raise ValueError(f"`nodes` must be a list of node names, got {nodes!r}")
    if len(nodes) < 2:
        raise ValueError("`nodes` needs two or more nodes (leave it out for a single-node server)")
    if len(set(nodes)) != len(nodes):
        raise ValueError(f"`nodes` names a node twice: {nodes!r}")
    return list(nodes)


def dist_port(args: Mapping[str, Any]) -> int:
    value = args.get("dist_port", DEFAULT_DIST_PORT)
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= 65535:
        raise ValueError(f"`dist_port` must be a port number, got {value!r}")
    return value


def single_node_args(args: Mapping[str, Any]) -> dict[str, Any]:
    """The `with` table without the multi-node keys: what the single-node argument builder reads."""
    return {k: v for k, v in args.items() if k not in MULTINODE_KEYS}


def multinode_problems(args: Mapping[str, Any]) -> list[str]:
    problems = []
    try:
        nodes = node_names(args)
    except ValueError as exc:
        return [str(exc)]
    try:
        dist_port(args)
    except ValueError as exc:
        problems.append(str(exc))
    tp = args.get("tp", 1)
    if isinstance(tp, int) and not isinstance(tp, bool) and tp % len(nodes):
        problems.append(f"`tp` = {tp} does not divide over {len(nodes)} nodes: SGLang runs tp/nnodes "
                        "schedulers on each node")
    return problems


def dist_init_addr(host: str, port: int) -> str:
    """HOST:PORT, an IPv6 address in brackets (`[fd00::1]:20000`)."""
    try:
        if ipaddress.ip_address(host).version == 6:
            return f"[{host}]:{port}"
    except ValueError:
        pass  # a host name
    return f"{host}:{port}"


def rank_launches(base_argv: Sequence[str], nodes: Sequence[str], rank0_address: str, port: int) -> list[RankLaunch]:
    """One launch per node: the single-node command plus --nnodes, --node-rank and rank 0's --dist-init-addr."""
    addr = dist_init_addr(rank0_address, port)
    return [RankLaunch(node, i, [*base_argv, "--nnodes", str(len(nodes)), "--node-rank", str(i),
                                 "--dist-init-addr", addr])
            for i, node in enumerate(nodes)]


def checked_paths(args: Mapping[str, Any]) -> list[str]:
    """The model and drafter paths that must exist on every node: absolute ones (a hub id is fetched there)."""
    out = []
    for key in ("model", "draft"):
        value = args.get(key)
        if isinstance(value, str) and value.startswith("/"):
            out.append(value)
    return out


def candidate_interfaces(interfaces: Sequence[str]) -> list[str]:
    return [i for i in interfaces if not i.startswith(_NOT_CANDIDATES)]


def nccl_interfaces(value: str, interfaces: Sequence[str]) -> list[str]:
    """The interfaces among `interfaces` that NCCL_SOCKET_IFNAME=`value` lets NCCL use, by NCCL's rules (2.30.7,
    src/os/linux.cc `ncclOsFindInterfaces`, src/misc/utils.cc `parseStringList`/`matchIfList`; before 2.29
    src/misc/socket.cc `findInterfaces`): a leading `^` excludes the list, then a leading `=` makes each entry an
    exact name (else a prefix: `eth` matches eth0 and eth1); entries are comma-separated, empty ones skipped,
    and what follows a `:` in an entry is a port, not part of the name."""
    exclude = value.startswith("^")
    rest = value[1:] if exclude else value
    exact = rest.startswith("=")
    rest = rest[1:] if exact else rest
    names = [n for n in (entry.split(":", 1)[0] for entry in rest.split(",")) if n]

    def listed(iface: str) -> bool:
        if not names:
            return True  # NCCL: an empty list matches everything (then `^` excludes everything)
        return any(iface == n if exact else iface.startswith(n) for n in names)

    return [i for i in interfaces if listed(i) != exclude]


def gloo_missing(value: str, interfaces: Sequence[str]) -> list[str]:
    """The names in GLOO_SOCKET_IFNAME=`value` the node does not have: Gloo takes each comma-separated name
    as an exact interface name, no prefixes (PyTorch torch/csrc/distributed/c10d/init.cpp: a device per
    `split(',', GLOO_SOCKET_IFNAME)` entry, `ProcessGroupGloo::createDeviceForInterface`)."""
    return [n for n in value.split(",") if n and n not in interfaces]


def _ifname_findings(f: NodeFacts) -> list[Finding]:
    """NODE_IFNAME_MISSING: an IFNAME variable set for the node that names none of its interfaces (up)."""
    out = []
    up = ", ".join(f.interfaces) or "none"
    nccl = str(f.env.get("NCCL_SOCKET_IFNAME", ""))
    if nccl.strip() and not nccl_interfaces(nccl, f.interfaces):
        out.append(Finding("error", "NODE_IFNAME_MISSING",
                           f"node {f.node}: NCCL_SOCKET_IFNAME={nccl!r} matches none of its interfaces that are "
                           f"up ({up}): NCCL finds no socket interface and the ranks fail at init; set it to the "
                           "interface the nodes reach each other on (a prefix, `=NAME` exact, `^NAME` excluded)"))
    gloo = str(f.env.get("GLOO_SOCKET_IFNAME", ""))
    if gloo.strip() and (missing := gloo_missing(gloo, f.interfaces)):
        out.append(Finding("error", "NODE_IFNAME_MISSING",
                           f"node {f.node}: GLOO_SOCKET_IFNAME={gloo!r} names {', '.join(missing)}, which it does "
                           f"not have up ({up}): Gloo takes exact interface names and the ranks fail at init"))
    return out


def preflight(facts: Sequence[NodeFacts]) -> list[Finding]:
    """Errors that refuse the launch: a path missing on a node, a node with several interfaces and no IFNAME,
    an IFNAME that names no interface of the node."""
    out: list[Finding] = []
    for f in facts:
        for path in f.missing:
            out.append(Finding("error", "NODE_PATH_MISSING",
                               f"node {f.node}: {path} does not exist there (every node loads the model and "
                               "the drafter from its own disk)"))
        ifaces = candidate_interfaces(f.interfaces)
        unset = [v for v in IFNAME_VARS if not str(f.env.get(v, "")).strip()]
        if len(ifaces) > 1 and unset:
            out.append(Finding("error", "NODE_IFNAME_UNSET",
                               f"node {f.node} has {len(ifaces)} network interfaces ({', '.join(ifaces)}) and "
                               f"{' / '.join(unset)} {'is' if len(unset) == 1 else 'are'} not set: NCCL and Gloo "
                               "may pick different ones and the ranks hang at init (sglang#958); set them in the "
                               "step's env to the interface the nodes reach each other on"))
        out += _ifname_findings(f)
    return out
