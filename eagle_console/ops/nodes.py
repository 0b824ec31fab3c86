"""Every cluster node's GPUs, holders and orphan kill, for both faces (no Ray import until asked).

A node's reading comes from its NodeAgent (eagle_console.cluster.agent); a node that does not answer
within READ_TIMEOUT_S is `reachable: false` with the last reading this process got from it (its age
says how old), never an empty list of GPUs.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from eagle_console.journal import Journal
    from eagle_console.node.gpus import GpuSample, NodeSample
    from eagle_console.node.procs import Holder

READ_TIMEOUT_S = 2.0
_last: dict[str, dict[str, Any]] = {}  # node name -> its last reading in this process
_known: dict[str, Any] = {}  # node name -> its ClusterNode as last seen: a node that vanishes stays listed


def this_machine(entries: list[dict[str, Any]], local: NodeSample | None) -> str | None:
    """The node whose GPUs are this machine's (`local`'s GPU UUIDs): the console runs on it, so its GPUs and
    holders are shown and killed once, as this machine's (with the console's own protections)."""
    local_uuids = {g.uuid for g in local.gpus if g.uuid} if local is not None else set()
    if not local_uuids:
        return None
    for e in entries:
        uuids = {g.get("uuid") for g in e.get("gpus") or []}
        if uuids and uuids == local_uuids:
            return e["name"]
    return None


def holders_of(entry: dict[str, Any]) -> list[Holder]:
    """A node entry's holders as Holder records (for the same tables as this machine's), None-safe."""
    from eagle_console.node.procs import Holder

    by_pid: dict[int, dict[int, float]] = {}  # the per-GPU memory is in the GPUs' process lists
    for g in entry.get("gpus") or []:
        for p in g.get("processes") or []:
            if p.get("used_mib") is not None:
                by_pid.setdefault(p["pid"], {})[g["index"]] = p["used_mib"]
    return [Holder(pid=d["pid"], ppid=d.get("ppid"), user=d.get("user"), command=d.get("command") or "",
                   gpus=list(d.get("gpus") or []), used_mib=d.get("used_mib"), cls=d.get("class") or "other",
                   owner=d.get("owner"), reason=d.get("reason"), used_by_gpu=by_pid.get(d["pid"], {}))
            for d in entry.get("holders") or []]


def gpus_of(entry: dict[str, Any]) -> list[GpuSample]:
    """A node entry's GPUs as GpuSample records (the `gpus --json` keys are the sample's field names)."""
    from eagle_console.node.gpus import GpuSample

    keys = set(GpuSample.__dataclass_fields__) - {"processes"}
    return [GpuSample(**{k: v for k, v in g.items() if k in keys}) for g in entry.get("gpus") or []]


def tracked_on(journal: Journal | None, node: str) -> list:
    """What `node`'s agent classifies by: the runs on it, and the sessions of the multi-node ranks on it
    (node/tracked.py: a rank's session is its own, not its step's run's). The agent judges there whether
    each leader still runs."""
    from dataclasses import asdict

    from eagle_console.node.tracked import node_runs, rank_sessions

    runs = node_runs(journal, node) + [s.run for s in rank_sessions(journal) if s.on_ray and s.node == node]
    return [asdict(r) for r in runs]  # plain data: it travels as JSON to the driver process


def read_nodes(address: str, journal: Journal | None = None,
               timeout: float = READ_TIMEOUT_S) -> list[dict[str, Any]]:
    """One entry per node: name, address, reachable, reading_age_s, gpus, holders, error. Raises
    ClusterError (HeadUnreachable: "head unreachable since HH:MM:SS") when the head does not answer."""
    from eagle_console.cluster.connect import ask_agents, cluster_nodes
    from eagle_console.cluster.link import error_point

    nodes = cluster_nodes(address, timeout=timeout)
    errors: dict[str, str] = {}
    for name, known in _known.items():  # the GCS drops a dead node from its table seconds later (Ray 2.60)
        if name not in {n.name for n in nodes}:
            nodes.append(known._replace(alive=False))
            errors[name] = "gone from the cluster's node table (its raylet died or left)"
    _known.update({n.name: n for n in nodes})
    calls = {}
    for n in nodes:
        if not n.alive:
            errors.setdefault(n.name, "the node is dead (the cluster's health check)")
            continue
        calls[n.name] = ("read", [tracked_on(journal, n.name)])
    answers = ask_agents(address, calls, timeout) if calls else {}
    for name in calls:
        answer = answers.get(name) or {"error": f"no answer within {timeout:g}s"}
        if "ok" in answer:
            _last[name] = answer["ok"]
        else:  # ActorDiedError, a worker crash, no answer in time: the node is unreachable
            kind = (answer.get("kinds") or [""])[0]
            text = error_point(Exception(answer["error"])) if kind != "GetTimeoutError" else answer["error"]
            errors[name] = f"{kind}: {text}" if kind and kind != "GetTimeoutError" else text
    now = time.time()
    out = []
    for n in nodes:
        last = _last.get(n.name)
        out.append({
            "name": n.name, "address": n.address, "node_id": n.node_id, "reachable": n.name not in errors,
            "error": errors.get(n.name),
            "reading_age_s": round(now - last["sampled_at"], 1) if last else None,
            "gpus": last["gpus"] if last else None,  # None: never read, not "0 GPUs"
            "holders": last["holders"] if last else None,
            "refused": last.get("refused", {}) if last else {},
        })
    return out


def orphans_left_on(entry: Mapping[str, Any]) -> list[int]:
    """The orphans a node's agent chose and did not signal (another user's, another PID namespace's): their
    GPU memory stays held, so the kill failed there, as `orphans_left` says of this machine's. A holder a
    scope spares by design (a console, a live job) is never an orphan, so it is not counted."""
    from eagle_console.node.holders import orphan_pids_left

    classes = {h.get("pid"): h.get("class") for h in entry.get("holders") or []}
    return orphan_pids_left(classes, [r.get("pid") for r in entry.get("refused") or []])


def kill_on_nodes(address: str, *, scope: str, match: list[str], grace: float, journal: Journal | None,
                  include_tracked: bool = False, pids: dict[str, list[int]] | None = None,
                  who: str | None = None, face: str | None = None,
                  skip: str | None = None) -> dict[str, dict[str, Any]]:
    """Kill on every reachable node (or only `pids[node]`), each by its agent; one KillRecord per node in
    the journal (its data names the node). `skip`: the node that is this machine (this_machine), killed by
    the local scan with the face's own protections (its agent knows only the runs journaled for its node)."""
    from concurrent.futures import ThreadPoolExecutor

    from eagle_console.cluster.connect import ClusterError, RemoteError, ask_agent, cluster_nodes
    from eagle_console.cluster.link import error_point
    from eagle_console.journal.kills import KillRecord, journal_kill
    from eagle_console.journal.operator import current_operator

    targets = [n.name for n in cluster_nodes(address)
               if n.alive and n.name != skip and (pids is None or n.name in pids)]
    out: dict[str, dict[str, Any]] = {}

    def kill_on(name: str) -> Any:
        return ask_agent(address, name, "kill", scope, match, grace, tracked_on(journal, name),
                         None if pids is None else pids[name], include_tracked, timeout=grace + 60.0)

    with ThreadPoolExecutor(max_workers=max(1, len(targets))) as pool:  # every node's kill at once
        asked = {name: pool.submit(kill_on, name) for name in targets}
    for name, future in asked.items():
        try:
            data: Any = future.result()
        except RemoteError as exc:  # that node's kill failed: say so, go on with the others
            out[name] = {"error": error_point(exc)}
            continue
        except ClusterError as exc:  # the head went: the node could not be asked
            out[name] = {"error": str(exc)}
            continue
        record = KillRecord(who=who or current_operator(), scope=scope, face=face or data["face"], step_id=None,
                            run_id=None, killed=data["killed"], survivors=data["survivors"], gone=data["gone"],
                            refused=data["refused"], freed_mib=data["freed_mib"])
        if journal is not None:
            journal_kill(journal, record, node=name)
        out[name] = {**record._asdict(), "holders": data["holders"], "error": None}
    return out
