"""`eagle-console demo`: build the simulated node and its plan, then open the console on it."""

from __future__ import annotations

import argparse
import signal
import sys
import tempfile
from pathlib import Path


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "demo", help="build a simulated 8-GPU node and a Phase 0 plan in DIR, and open the console on it",
        description="Builds a simulated PCIe node (8 GPUs, two orphaned workers holding memory, EAGLE-3 "
        "drafters, a Kimi-K2.5 config, a simulated SGLang server and extraction job) and a demo plan, then "
        "opens the console. Walk it with n (next), K (kill orphans), m (mark) and u (rollback).",
    )
    p.add_argument("--dir", metavar="DIR", default=None, help="where to build it (default: a new temp dir)")
    p.add_argument("--no-tui", action="store_true", help="build it and print how to use it, without the console")
    p.add_argument("--container", action="store_true",
                   help="the node's NVML reports host pids, as inside an LXC container")
    p.add_argument("--nodes", type=int, default=1, metavar="N",
                   help="N simulated nodes (2 or more: a local Ray cluster, one SGLang server across them; "
                   "needs the cluster extra)")
    p.set_defaults(func=cmd_demo)


def cmd_demo(args: argparse.Namespace) -> int:
    from eagle_console.demo.build import build_demo

    root = Path(args.dir) if args.dir else Path(tempfile.mkdtemp(prefix="eagle-console-demo-"))
    if args.nodes != 1:
        return cmd_demo_nodes(args, root)
    sim = root / "sim"
    if args.no_tui:  # built for the operator's own commands: its orphans stay
        print(f"building the simulated node in {root} …", flush=True)
        plan = build_demo(root, container=args.container)
        print(f"plan: {plan}\nsim:  {sim}\n")
        print("try:")
        print(f"  eagle-console gpus --sim {sim}")
        print(f"  eagle-console orphans {plan} --sim {sim}")
        print(f"  eagle-console next {plan} --yes --wait")
        print(f"  eagle-console tui {plan} --sim {sim}")
        return 0
    from eagle_console.cli.tui_cmds import open_console

    exit_on_hangup()  # from the build on; the console asks its app to quit instead while it runs
    plan = root.resolve() / "plans" / "demo.toml"
    try:
        print(f"building the simulated node in {root} …", flush=True)
        plan = build_demo(root, container=args.container)
        return open_console(plan, sim_dir=sim, runs_stop_on_quit=True)
    finally:
        print(stopped_line(*stop_demo(plan, root), root))


def exit_on_hangup() -> None:
    """SIGTERM and SIGHUP (the ssh window closed, the tmux session killed) end the demo as Ctrl+C does, so its
    `finally` stops what it started: they killed it at once, and its simulated processes (26 Ray processes
    for two nodes) ran on."""
    for sig in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, lambda signum, _frame: sys.exit(128 + signum))


def stop_demo(plan: Path, root: Path) -> tuple[list[str], int]:
    """The demo is a toy node: leave no simulated server or worker running after its console closes.
    Returns the runs it stopped (`0.3 (pid 7366)`) and how many processes ended with them or after them."""
    from eagle_console.demo.build import stop_leftovers
    from eagle_console.journal import Journal
    from eagle_console.plan.loader import PlanError, load_plan
    from eagle_console.processes import stop_session

    runs: list[str] = []
    count = 0
    try:
        journal = Journal.for_plan(load_plan(plan))
        for run in journal.open_runs():
            # a node run (a Ray job) went with the local cluster, stopped before this
            where = f"on node {run.node}" if run.node else f"pid {run.pid or run.supervisor_pid or '?'}"
            runs.append(f"{run.step_id} ({where})")
            if run.sid:
                count += len(stop_session(run.sid, run.pgid, 2.0))
    except PlanError:
        pass
    return runs, count + len(stop_leftovers(root))


def stopped_line(runs: list[str], processes: int, root: Path, before: str = "") -> str:
    """What quitting the demo did, in one line: the console's `q` does not say "keeps running" in the demo,
    since this stops every run (it said so, then stopped them: two lines that contradicted each other)."""
    from eagle_console.figures import counted

    what = [before] if before else []
    if runs:
        what.append(f"the demo's {'run' if len(runs) == 1 else 'runs'} of {', '.join(runs)}")
    sims = counted(processes, "simulated process")
    if runs:  # the processes counted include the runs' own
        done = f"stopped {' and '.join(what)}" + (f": {sims} in all" if processes else "")
    elif what:
        done = f"stopped {what[0]}" + (f" and {sims}" if processes else "")
    else:
        done = f"stopped {sims} of the demo" if processes else "nothing of the demo was running"
    return f"{done}; its files stay in {root}"


def interrupted_line(root: Path, before: str = "") -> str:
    """A demo stopped while it builds or starts (Ctrl+C, SIGTERM, its terminal gone): the nodes' simulated
    orphans go too, as on quit; they were left holding their memory. Said, since the exit is otherwise
    silent."""
    from eagle_console.demo.multinode import stop_node_leftovers

    return "interrupted: " + stopped_line([], len(stop_node_leftovers(root)), root, before=before)


def cmd_demo_nodes(args: argparse.Namespace, root: Path) -> int:
    """`demo --nodes N`: N sim nodes, a local Ray cluster of them (one raylet each) and a plan on it."""
    from eagle_console.cli.common import CliError
    from eagle_console.demo.multinode import build_nodes, cluster_starter, stop_node_leftovers, write_plan

    if args.container:
        raise CliError("demo: --container and --nodes do not go together yet")
    exit_on_hangup()  # what the demo starts goes with it, from here on
    try:
        print(f"building {args.nodes} simulated nodes in {root} …", flush=True)
        plan = build_nodes(root, args.nodes)
    except ValueError as exc:
        raise CliError(f"demo: {exc}") from None
    except BaseException:
        print(interrupted_line(root), flush=True)
        raise
    start = cluster_starter()
    if start is None:
        print(f"plan:  {plan}\nnodes: {root / 'nodes'} (described in {root / 'nodes.json'})")
        print("the multi-node demo needs the cluster extra (eagle_console.cluster, Ray) to start a local Ray "
              "head and one raylet per node: pip install 'eagle-console[cluster]'", file=sys.stderr)
        return 0 if args.no_tui else 2
    sims = {p.name: p for p in sorted((root / "nodes").iterdir())}
    print(f"starting a local Ray cluster: head on node {next(iter(sims))}, one raylet per other node …", flush=True)
    try:
        cluster = start(root=root, nodes=sims)  # stops itself again on Ctrl+C or a failure while starting
    except BaseException:
        print(interrupted_line(root, "the local Ray cluster it was starting"), flush=True)
        raise
    try:
        plan = write_plan(root, list(sims), cluster=cluster.address, token_path=cluster.token_path)
        print(f"plan:  {plan}\nRay:   {cluster.address} (dashboard {cluster.dashboard}; "
              f"{len(cluster.pids())} processes; token in {cluster.token_path})")
        if args.no_tui:
            print("--no-tui: the local Ray cluster is stopped again now (a console keeps it while it is open)")
            return 0
        from eagle_console.cli.tui_cmds import open_console

        return open_console(plan, sim_dir=sims[next(iter(sims))], runs_stop_on_quit=True)
    finally:
        cluster.stop()  # quitting the demo stops the Ray processes it started, and only those
        runs, stopped = stop_demo(plan, root)
        print(stopped_line(runs, stopped + len(stop_node_leftovers(root)), root, before="the local Ray cluster"))
