"""The multi-node branch of `sglang.server` (`with.nodes`): preflight, the ranks' service, their undo.

The action process asks the NodeRunner about every node (paths, interfaces, environment), refuses the
launch on a preflight error, and execs `eagle_console.sglang.multinode_run` as the service: it starts one
rank per node and stops them all together. Undo stops every rank recorded in the step's artifacts, in case
the service was killed before it could (rollback's SIGKILL after the grace).
"""

from __future__ import annotations

import json
import os
import sys
from typing import Any

from eagle_console.engine.builtins.base import ActionContext, BuiltinError
from eagle_console.sglang.multinode import (
    NodeFacts,
    checked_paths,
    dist_port,
    node_names,
    preflight,
    rank_launches,
    single_node_args,
)
from eagle_console.sglang.noderunner import CLUSTER_ENV, RUNNER_ENV, NodeError, NodeRunner, runner_from_env

SERVICE_MODULE = "eagle_console.sglang.multinode_run"


def ray_factory() -> str | None:
    """`module:factory` of the Ray runner when this action belongs to a plan with [cluster] (its address in
    EAGLE_CONSOLE_CLUSTER) and the operator named no runner of their own; else None."""
    if os.environ.get(RUNNER_ENV, "").strip() or not os.environ.get(CLUSTER_ENV, "").strip():
        return None
    from eagle_console.cluster.noderunner import ray_runner_from_env

    return f"{ray_runner_from_env.__module__}:{ray_runner_from_env.__name__}"


def node_runner(environ: dict[str, str] | None = None) -> NodeRunner:
    """The runner this action reaches its nodes with: the one EAGLE_CONSOLE_NODE_RUNNER names, else the
    Ray runner of the plan's [cluster], else the local runner (sglang/noderunner.py)."""
    env = dict(os.environ) if environ is None else environ
    if env.get(CLUSTER_ENV, "").strip() and not env.get(RUNNER_ENV, "").strip():
        try:
            from eagle_console.cluster.noderunner import ray_runner_from_env
        except ImportError as exc:  # Ray itself is imported on first use; this is the package missing
            raise NodeError(f"the plan's [cluster] needs the cluster extra: {exc}") from None
        return ray_runner_from_env(env)
    return runner_from_env(env)


def node_facts(runner: NodeRunner, nodes: list[str], args: dict[str, Any], env: dict[str, str]) -> list[NodeFacts]:
    """What preflight needs of each node, asked through the runner (a rank gets `env` + the node's own)."""
    paths = checked_paths(args)
    facts = []
    for node in nodes:
        missing = tuple(p for p in paths if not runner.path_exists(node, p))
        facts.append(NodeFacts(node, missing, tuple(runner.interfaces(node)), {**env, **runner.node_env(node)}))
    return facts


def stop_grace_s() -> float:
    """Half the engine's rollback grace: the ranks are stopped before the engine's SIGKILL of the service."""
    from eagle_console.engine.spec import kill_grace_s

    return max(1.0, kill_grace_s() / 2)


def ranks_service_argv(ctx: ActionContext, name: str) -> list[str]:
    from eagle_console.pyenv import own_process_env
    from eagle_console.sglang.args import LaunchArgsError, build_launch_argv, launch_findings

    nodes = node_names(ctx.args)
    single = single_node_args(ctx.args)
    for f in launch_findings(single):
        if f.severity != "error":
            ctx.say(f"{name}: {f.severity} {f.code}: {f.message}")
    try:
        base = build_launch_argv(single)
        runner = node_runner()
        facts = node_facts(runner, nodes, single, dict(os.environ))
        rank0 = runner.address(nodes[0])
    except (LaunchArgsError, NodeError) as exc:
        raise BuiltinError(str(exc)) from None
    problems = preflight(facts)
    for f in problems:
        ctx.say(f"{name}: {f.severity} {f.code}: {f.message}")
    if problems:
        raise BuiltinError(f"{len(problems)} preflight error(s) on the nodes: nothing launched")
    ctx.say(f"{name}: preflight passed on nodes {', '.join(nodes)}")
    launches = [{"node": r.node, "rank": r.rank, "argv": r.argv}
                for r in rank_launches(base, nodes, rank0, dist_port(ctx.args))]
    spec = {"launches": launches, "artifacts": str(ctx.artifacts), "grace_s": stop_grace_s()}
    # The service is our own module: it needs our import path (it drops it again for the ranks).
    env = own_process_env(dict(os.environ))
    factory = ray_factory()
    if factory is not None:  # the service picks its runner by the name it is given (sglang names no cluster)
        env[RUNNER_ENV] = factory
    os.environ.clear()
    os.environ.update(env)
    return [sys.executable, "-m", SERVICE_MODULE, "--launch", json.dumps(spec)]


def rank0_host(args: dict[str, Any], fallback: str) -> str:
    try:
        return node_runner().address(node_names(args)[0])
    except (NodeError, ValueError):
        return fallback


def stop_ranks(ctx: ActionContext, name: str) -> int:
    from eagle_console.sglang.multinode_run import load_ranks, stop_all

    ranks = load_ranks(ctx.artifacts)
    if not ranks:
        ctx.say(f"{name}: no record of the ranks started; nothing to stop")
        return 0
    try:
        runner = node_runner()
    except NodeError as exc:
        raise BuiltinError(str(exc)) from None
    stop_all(runner, ranks, stop_grace_s())
    left = [r for r in ranks if runner.poll(r) is None]
    if left:
        which = ", ".join(f"rank {r.rank} on {r.node}" for r in left)
        if runner.problem:  # not asked: the head unreachable, say (a dead head's raylets and ranks run on)
            raise BuiltinError(f"not known to have stopped: {which} ({runner.problem})")
        raise BuiltinError(f"still running after the stop: {which}")
    ctx.say(f"{name}: every rank stopped ({', '.join(f'rank {r.rank} on {r.node}' for r in ranks)})")
    return 0
