"""Running one process on a named node: the seam between multi-node SGLang and whatever reaches the nodes.

A `NodeRunner` answers the few questions a multi-node launch asks of each node (its address, its network
interfaces, whether a path exists there, what environment a process started there gets) and starts, polls
and stops one rank there. `LocalRunner` runs every "node" on this machine (tests, the demo: each node is a
simulated node dir); the Ray runner of the `cluster` extra implements the same protocol with Ray jobs.

Which runner a step uses: `EAGLE_CONSOLE_NODE_RUNNER=module:factory` (a callable returning a NodeRunner),
else the Ray runner when the plan has `[cluster]` (the engine puts its address in EAGLE_CONSOLE_CLUSTER and
the plan's env keys in EAGLE_CONSOLE_RANK_ENV, which the ranks get; the engine's sglang.server built-in makes
that choice, engine/builtins/sglang_ranks.node_runner: this package names no cluster module),
else a `LocalRunner` configured by the JSON file `EAGLE_CONSOLE_NODES` names:
`{"a": {"address": "127.0.0.1", "env": {"EAGLE_CONSOLE_SIM": "/x/a"}, "interfaces": ["eth0"]}, ...}`
(`interfaces` left out: this machine's own; `root`: the folder the node's files are under, as a
container's root fs, else /).
"""

from __future__ import annotations

import importlib
import os
import subprocess
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

RUNNER_ENV = "EAGLE_CONSOLE_NODE_RUNNER"
NODES_ENV = "EAGLE_CONSOLE_NODES"
CLUSTER_ENV = "EAGLE_CONSOLE_CLUSTER"  # the plan's [cluster] address, set by the engine for every action
RANK_ENV = "EAGLE_CONSOLE_RANK_ENV"  # the plan's and the step's env keys: what a rank on another node gets


class NodeError(Exception):
    """A node the runner does not know or cannot reach (the message names it)."""


@dataclass(frozen=True)
class RankProcess:
    """A started rank. JSON-safe, so a later process (rollback's undo) can stop it from the record alone."""

    node: str
    rank: int
    ref: dict[str, Any]  # the runner's own handle: local {"pid", "ctime"}; Ray {"job_id", ...}
    log: str  # a file on this machine where the rank's output appears

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> RankProcess:
        return cls(node=str(data["node"]), rank=int(data["rank"]), ref=dict(data["ref"]), log=str(data["log"]))


@runtime_checkable
class NodeRunner(Protocol):
    def address(self, node: str) -> str:
        """The address other nodes reach `node` at (rank 0's is the dist-init host)."""

    def interfaces(self, node: str) -> list[str]:
        """Network interfaces of `node` that are up (loopback included or not: the caller filters)."""

    def path_exists(self, node: str, path: str) -> bool: ...

    def node_env(self, node: str) -> dict[str, str]:
        """What the runner adds to the environment of a process it starts on `node`."""

    def start(self, node: str, rank: int, argv: list[str], env: Mapping[str, str], log: Path) -> RankProcess:
        """Start `argv` on `node` in a session of its own; its output appears in `log` on this machine."""

    # Why the runner could not ask about a rank at its last try (the Ray head unreachable), None once it
    # could: `poll` then says None, never an end it does not know. A dead head's raylets and their ranks
    # run on; taken for an end, the step failed and a serving rank 0 was listed as an orphan to kill.
    problem: str | None

    def poll(self, proc: RankProcess) -> int | None:
        """None while the rank runs or cannot be asked about (`problem` says why); its exit code once it
        ended (-1 when the code cannot be known)."""

    def stop(self, proc: RankProcess, grace_s: float) -> None:
        """SIGTERM the rank's whole session, SIGKILL what is left after `grace_s`; a no-op once it is gone."""

    def session(self, proc: RankProcess) -> dict[str, Any] | None:
        """The rank's session on its node, {"pid", "ctime"} of its leader (sid == pid); None until known."""


@dataclass(frozen=True)
class LocalNode:
    address: str = "127.0.0.1"
    env: dict[str, str] = field(default_factory=dict)
    interfaces: list[str] | None = None  # None: this machine's
    root: str | None = None  # the node's files are under this folder (a container's root fs); None: /


def machine_interfaces() -> list[str]:
    """This machine's interfaces that are up (/sys/class/net/*/operstate up or unknown), loopback included."""
    out = []
    for dev in sorted(Path("/sys/class/net").glob("*")):
        try:
            state = (dev / "operstate").read_text().strip()
        except OSError:
            continue
        if state in ("up", "unknown"):
            out.append(dev.name)
    return out


class LocalRunner:
    """Every node is this machine; a node's `env` (its EAGLE_CONSOLE_SIM) tells the nodes apart."""

    problem: str | None = None  # its children answer to wait(): always known

    def __init__(self, nodes: Mapping[str, LocalNode]) -> None:
        self.nodes = dict(nodes)
        self._children: dict[int, subprocess.Popen] = {}

    @classmethod
    def from_file(cls, path: str | os.PathLike[str]) -> LocalRunner:
        from eagle_console.inputfile import CONFIG_CAP, InputFileError, load_json

        try:
            data = load_json(path, CONFIG_CAP)
        except InputFileError as exc:
            raise NodeError(f"{NODES_ENV}={path}: unreadable ({exc})") from None
        if not isinstance(data, dict):
            raise NodeError(f"{NODES_ENV}={path}: a JSON object of nodes is expected")
        nodes = {}
        for name, spec in data.items():
            spec = spec if isinstance(spec, dict) else {}
            ifaces = spec.get("interfaces")
            nodes[str(name)] = LocalNode(address=str(spec.get("address", "127.0.0.1")),
                                         env={str(k): str(v) for k, v in (spec.get("env") or {}).items()},
                                         interfaces=[str(i) for i in ifaces] if isinstance(ifaces, list) else None,
                                         root=str(spec["root"]) if spec.get("root") else None)
        return cls(nodes)

    def _node(self, node: str) -> LocalNode:
        try:
            return self.nodes[node]
        except KeyError:
            known = ", ".join(sorted(self.nodes)) or "none"
            raise NodeError(f"node {node!r} is not known to the local runner (known: {known}; "
                            f"describe the nodes in the file {NODES_ENV} names)") from None

    def address(self, node: str) -> str:
        return self._node(node).address

    def interfaces(self, node: str) -> list[str]:
        n = self._node(node)
        return list(n.interfaces) if n.interfaces is not None else machine_interfaces()

    def path_exists(self, node: str, path: str) -> bool:
        root = self._node(node).root
        return os.path.exists(os.path.join(root, path.lstrip("/")) if root else path)

    def node_env(self, node: str) -> dict[str, str]:
        return dict(self._node(node).env)

    def start(self, node: str, rank: int, argv: list[str], env: Mapping[str, str], log: Path) -> RankProcess:
        from eagle_console.processes import start_of
        from eagle_console.statedir import open_created, private_dirs

        full_env = {**os.environ, **env, **self.node_env(node)}
        private_dirs(log.parent)
        fd = open_created(log, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
        try:  # a session of its own: the rank is stopped as a whole, as it would be on another machine
            child = subprocess.Popen(argv, env=full_env, stdin=subprocess.DEVNULL, stdout=fd,
                                     stderr=subprocess.STDOUT, start_new_session=True)
        finally:
            os.close(fd)
        self._children[child.pid] = child
        return RankProcess(node=node, rank=rank, ref={"pid": child.pid, "ctime": start_of(child.pid)},
                           log=str(log))

    def poll(self, proc: RankProcess) -> int | None:
        from eagle_console.processes import alive

        pid = int(proc.ref["pid"])
        child = self._children.get(pid)
        if child is not None:
            return child.poll()
        return None if alive(pid, proc.ref.get("ctime")) else -1

    def session(self, proc: RankProcess) -> dict[str, Any] | None:
        return {"pid": int(proc.ref["pid"]), "ctime": proc.ref.get("ctime")}  # the child leads its session

    def stop(self, proc: RankProcess, grace_s: float) -> None:
        from eagle_console.processes import stop_session

        pid = int(proc.ref["pid"])
        stop_session(pid, pid, grace_s, leader_start=proc.ref.get("ctime"), own_child=self._children.get(pid))
        child = self._children.get(pid)
        if child is not None:
            try:
                child.wait(timeout=grace_s + 5)
            except subprocess.TimeoutExpired:
                pass


def runner_from_env(environ: Mapping[str, str] | None = None) -> NodeRunner:
    """The runner `EAGLE_CONSOLE_NODE_RUNNER` names, else the local runner (see the module's docstring; a
    plan's [cluster] is the engine's choice to make). NodeError when the named one cannot be loaded."""
    env = os.environ if environ is None else environ
    target = env.get(RUNNER_ENV, "").strip()
    if target:
        module_name, _, attr = target.partition(":")
        try:
            factory = getattr(importlib.import_module(module_name), attr or "node_runner")
        except (ImportError, AttributeError) as exc:
            raise NodeError(f"{RUNNER_ENV}={target}: {exc}") from None
        return factory()
    nodes_file = env.get(NODES_ENV, "").strip()
    if nodes_file:
        return LocalRunner.from_file(nodes_file)
    return LocalRunner({})
