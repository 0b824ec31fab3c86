"""`gpus` and `orphans`: what holds the GPUs, and killing the orphaned workers."""

from __future__ import annotations

import argparse
import shutil
import sys
from typing import Any

from eagle_console.cli.common import CliError, add_json, add_sim, load_plan, open_journal, print_json, sim_dir
from eagle_console.ops.hints import Hints


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("gpus", help="GPUs and the processes holding them")
    add_json(p)
    add_sim(p)
    _add_cluster(p)
    p.set_defaults(func=cmd_gpus)

    p = sub.add_parser("orphans", help="list GPU holders with their class; --kill stops the orphans")
    p.add_argument("plan", nargs="?", help="plan whose runs count as tracked (optional)")
    add_json(p)
    p.add_argument("--kill", action="store_true", help="SIGTERM the orphans, SIGKILL them after --grace")
    p.add_argument("--scope", choices=("orphans", "all", "match"), default="orphans",
                   help="what --kill signals: orphans (default), every holder with GPU memory, or --match")
    p.add_argument("--match", action="append", default=[], metavar="REGEX",
                   help="with --scope match: command lines to kill (repeatable)")
    p.add_argument("--pid", action="append", type=int, default=None, metavar="PID",
                   help="with --kill: only these GPU holders of this machine, whatever their class "
                        "(repeatable); as root, another user's process is killed only when named here")
    p.add_argument("--include-tracked", action="store_true",
                   help="let --scope all/match kill processes of a live run too (its step fails)")
    p.add_argument("--yes", action="store_true", help="do not ask before killing")
    p.add_argument("--grace", default=None,
                   help="time between SIGTERM and SIGKILL: 10, 10s, 1m30s (default $EAGLE_CONSOLE_KILL_GRACE or 10s)")
    p.add_argument("--state-dir", default=None, help="journal location override for PLAN")
    add_sim(p)
    _add_cluster(p)
    p.set_defaults(func=cmd_orphans)


def _add_cluster(p: argparse.ArgumentParser) -> None:
    p.add_argument("--cluster", default=None, metavar="ADDRESS",
                   help="also every node of this Ray cluster (auto, ray://HOST:10001, HOST:6379; "
                        "orphans: default the plan's [cluster])")


def _cluster_address(args: argparse.Namespace, plan: Any = None) -> str | None:
    if args.cluster:
        return args.cluster
    return plan.cluster.address if plan is not None and plan.cluster is not None else None


def _nodes_section(address: str, local: Any) -> list[dict[str, Any]]:
    """`gpus --json`'s nodes (docs/cluster.md); the cluster unreachable is one entry saying so. The node
    whose GPUs are this machine's (`local`) says `this_machine`: they are the document's own `gpus`."""
    from eagle_console.cluster.connect import ClusterError
    from eagle_console.ops import read_nodes, this_machine

    try:
        nodes = read_nodes(address)
    except ClusterError as exc:
        return [{"name": None, "address": address, "reachable": False, "error": str(exc),
                 "reading_age_s": None, "gpus": None, "holders": None, "this_machine": False}]
    here = this_machine(nodes, local)
    return [{**n, "this_machine": n["name"] == here} for n in nodes]


def _print_nodes(nodes: list[dict[str, Any]]) -> None:
    for n in nodes:
        if n["name"] is None:  # the cluster itself: its head does not answer, or refused us
            print(f"cluster {n['address']}  UNREACHABLE ({n['error']})")
            continue
        age = "never read" if n["reading_age_s"] is None else f"read {n['reading_age_s']:g}s ago"
        state = "reachable" if n["reachable"] else f"UNREACHABLE ({n['error']})"
        print(f"node {n['name']} {n['address']}  {state}  {age}")
        if n["this_machine"]:
            print("  this machine: its GPUs are the ones listed below")
            continue
        for g in n["gpus"] or []:
            print(f"  {g['index']} {g['name'] or 'N/A'}  {_na(g['memory_used_mib'])}/{_na(g['memory_total_mib'])} MiB"
                  f"  {_na(g['utilization_pct'])}%")
        for h in n["holders"] or []:
            print(f"    {h['pid']:>7} {_na(h['used_mib']):>8} MiB  {h['class']:<7} {h['command'][:70]}")


def _na(value: Any, fmt: str = "{:.0f}") -> str:
    return "N/A" if value is None else fmt.format(value)


def cmd_gpus(args: argparse.Namespace) -> int:
    from eagle_console.node.gpus.unseen import unseen_notes
    from eagle_console.ops import read_gpus_once

    reading = read_gpus_once(sim_dir(args))  # no plan: no run is tracked
    sample = reading.sample
    doc = reading.document()
    address = _cluster_address(args)
    if address:
        doc["nodes"] = _nodes_section(address, sample)
    if args.json:
        print_json(doc)
        return 0
    if address:
        _print_nodes(doc["nodes"])
    if sample.error:
        print(f"{sample.backend}: {sample.error}")
    if reading.pid_namespace == "foreign":
        print("container: NVML pids are the host's (holders found by their open device files)")
    for g in doc["gpus"]:
        print(f"{g['index']} {g['name'] or 'N/A'}  {_na(g['memory_used_mib'])}/{_na(g['memory_total_mib'])} MiB  "
              f"{_na(g['utilization_pct'])}%  {_na(g['temperature_c'])}C  "
              f"{_na(g['power_w'])}/{_na(g['power_limit_w'])} W  PCIe {_na(g['pcie_gen'], '{}')}"
              f"x{_na(g['pcie_width'], '{}')}")
        for p in g["processes"]:
            print(f"    {p['pid']:>7} {_na(p['used_mib']):>8} MiB  {p['class']:<7} {p['owner'] or '-':<6} "
                  f"{p['command'][:80]}")
    for note in unseen_notes(sample):
        print(note)
    return 0


def _confirm(question: str) -> bool:
    if not sys.stdin.isatty():
        raise CliError("--kill needs --yes when not run from a terminal")
    answer = input(f"{question} [y/N] ")
    return answer.strip().lower() in ("y", "yes")


INCLUDE_TRACKED = Hints(include_tracked=": --include-tracked to kill it", pick=": --kill --pid {pid}")


def _print_holder_line(head: str, reason: str, h: Any, columns: int) -> None:
    # measured in terminal cells: a command line with Chinese in it (a path) is 2 cells a character
    from eagle_console.cli.termtext import cells, cut

    if not columns:
        print(head + reason + h.command[:70])
    elif cells(head) + cells(reason) + 20 <= columns:
        print(head + reason + cut(h.command, columns - cells(head) - cells(reason)))
    else:
        command_beside = columns - cells(head) >= 20  # else the command goes below, with the reason
        print(head + cut(h.command, columns - cells(head)) if command_beside else head.rstrip())
        if h.reason:
            _print_note(h.reason, columns)
        if not command_beside:
            print(cut(f"{'':>7} {h.command}", columns))


def _print_note(text: str, columns: int) -> None:
    """A holder's second line (its reason, why it is not signalled), wrapped at the terminal's width."""
    if not columns:
        print(f"{'':>7} {text}")
        return
    from eagle_console.cli.termtext import wrap

    print("\n".join(wrap(text, columns, first=" " * 8, rest=" " * 10)))


def _print_holders(holders: list, refused: dict[int, str], error: str | None = None,
                   unseen: list[str] | tuple[()] = ()) -> None:
    # At a terminal, no line wider than it (a holder's 170 columns wrapped into two rows at 120, three at
    # 80): the command cut to what is left, the reason on a line of its own when it does not fit beside.
    # Piped or redirected, one line a holder with 70 characters of its command, as before (whatever COLUMNS
    # says: pytest-xdist's workers export COLUMNS=80, and a script's environment may too).
    columns = shutil.get_terminal_size().columns if sys.stdout.isatty() else 0
    for h in holders:
        head = (f"{h.pid:>7} ppid {h.ppid if h.ppid is not None else '?':>7} {h.user or '?':<8} "
                f"gpus {','.join(map(str, h.gpus)) or '-':<7} {_na(h.used_mib):>8} MiB {h.cls:<7} "
                f"{h.owner or '-':<6} ")
        _print_holder_line(head, f"{h.reason or '':<28} ", h, columns)
        if h.pid in refused:
            _print_note(f"not signalled: {refused[h.pid]}", columns)
        elif h.same_session and h.cls == "orphan":
            _print_note("started from this terminal (its launcher is gone)", columns)
    if not holders and error is None and not unseen:  # with an error, "none" would be a guess: _finish says why
        print("no GPU holders")
    elif not holders and unseen:
        print("no GPU holder visible here, yet:")
    for note in unseen:
        print(note)


def cmd_orphans(args: argparse.Namespace) -> int:
    """A listing reports what it could not read in `error` and exits 0, as `gpus` does; `--kill` exits 1
    when it could not read the GPUs (nothing can say the memory came back), a process survived, or a
    cluster node could not be killed on (docs/cli.md, "Reading and acting on the GPUs")."""
    from eagle_console.node.gpus import cannot_read
    from eagle_console.node.gpus.unseen import unattributed_mib, unseen_notes
    from eagle_console.node.grace import GraceError, resolve_grace
    from eagle_console.node.kill import select_targets
    from eagle_console.ops import kill, kill_summary, orphans_left, plan_kill, scan

    if args.match and args.scope != "match":
        raise CliError("--match needs --scope match")
    if args.pid and not args.kill:
        raise CliError("--pid needs --kill (the listing shows every holder)")
    if args.pid and (args.scope != "orphans" or args.match):
        raise CliError("--pid names the processes to kill: leave out --scope and --match")
    try:
        grace = resolve_grace(args.grace, "--grace")
        select_targets([], args.scope, args.match)  # a bad scope/regex is bad usage, before any scan
    except (GraceError, ValueError) as exc:
        raise CliError(str(exc)) from None
    sim = sim_dir(args)  # a --sim that is no simulated node is bad input, before anything is read
    plan = _plan(args)
    # PLAN's journal: its runs are the tracked ones, and the kill is recorded there
    journal = open_journal(plan) if plan is not None else None
    if plan is not None and plan.cluster is not None and journal is not None:
        from eagle_console.engine.runner import Engine

        # its node runs' pids come from their jobs' logs: read now, or a run's own action on its node is
        # `other` there, which a scope-all kill would not spare
        Engine(plan, journal).reconcile()
    doc: dict[str, Any] = {"holders": [], "gpus": [], "killed": [], "survivors": [], "freed_mib": {},
                           "error": None}
    left: list[int] = []  # orphans in the kill's scope it did not signal: their memory stays held
    address = _cluster_address(args, plan)
    try:
        if address:
            doc["nodes"] = _orphans_on_nodes(args, address, grace, journal)
        nodes = doc.get("nodes") or {}
        here = next((n for n, e in nodes.items() if isinstance(e, dict) and e.get("this_machine")), None)
        try:
            found = scan(sim, journal, here=here)
        except Exception as exc:  # the backend failed outright: say so in the document, not as a traceback
            doc["error"] = f"cannot scan GPU holders: {exc}"
            return _finish(args, doc, blind=True)
        with found:
            doc["error"] = found.error and cannot_read(found.backend_name, found.error)
            blind = found.unavailable  # no backend at all, as opposed to a backend with some queries failing
            if args.pid:
                unknown = sorted(set(args.pid) - {h.pid for h in found.holders})
                if unknown:
                    raise CliError(f"not a GPU holder here: {' '.join(map(str, unknown))} "
                                   "(`eagle-console orphans` lists the holders)")
            plan = plan_kill(found, args.scope, args.match, include_tracked=args.include_tracked,
                             pids=args.pid)
            targets, refused = plan.targets, plan.not_signalled(INCLUDE_TRACKED)
            doc["holders"] = [_holder_dict(h, refused.get(h.pid)) for h in found.holders]
            doc["gpus"] = [{"index": g.index, "memory_used_mib": g.memory_used_mib,
                            "unattributed_mib": unattributed_mib(g)} for g in found.sample.gpus]
            if not args.json:
                _print_holders(found.holders, refused, found.error, unseen_notes(found.sample))
            out = sys.stderr if args.json else sys.stdout
            if args.kill and targets and not plan.signalled:
                left = [h.pid for h in plan.left]
                print("nothing signalled" + (f": {_left_line(left)}" if left else " (why: above)"), file=out)
            elif args.kill and targets and (args.yes or _confirm(plan.question())):
                def say(msg: str) -> None:
                    print(msg, file=out, flush=True)

                record = kill(found, targets, grace=grace, scope=plan.scope, face="cli", journal=journal,
                              say=say, picked=plan.picked)
                doc.update(killed=record.killed, survivors=record.survivors, freed_mib=record.freed_mib)
                left = [h.pid for h in orphans_left(targets, (r["pid"] for r in record.refused))]
                if not args.json:
                    print(kill_summary(record.killed, record.survivors, record.freed_mib))
                if left:
                    print(f"not signalled: {_left_line(left)}", file=out)
    finally:
        if journal is not None:
            journal.close()
    return _finish(args, doc, blind, left)


def _left_line(pids: list[int]) -> str:
    return f"{' '.join(map(str, pids))} (why: above): their GPU memory stays in use"


def _plan(args: argparse.Namespace) -> Any:
    if not args.plan:
        return None
    return load_plan(args.plan, args.state_dir)


def _orphans_on_nodes(args: argparse.Namespace, address: str, grace: float, journal: Any) -> dict[str, Any]:
    """Every node's holders, and with --kill its KillRecord (the kill runs on the node, by its agent)."""
    from eagle_console.cluster.connect import ClusterError
    from eagle_console.ops import (
        kill_on_nodes,
        kill_summary,
        orphans_left_on,
        read_nodes,
        sample_once,
        this_machine,
    )

    try:
        entries = read_nodes(address, journal)
        # the node that is this machine is listed and killed once, by the local scan below (as in the console)
        here = this_machine(entries, sample_once(sim_dir(args)))  # this machine's GPUs: their UUIDs tell
        out = {n["name"]: {"holders": [] if n["name"] == here else n["holders"] or [], "error": n["error"],
                           "this_machine": n["name"] == here} for n in entries}
        if args.kill and args.yes and not args.pid:  # --pid names this machine's processes
            for name, entry in kill_on_nodes(address, scope=args.scope, match=args.match, grace=grace,
                                             journal=journal, include_tracked=args.include_tracked,
                                             skip=here).items():
                out[name] = {**entry, "this_machine": False}
        # (a --kill without --yes asks about the local node only)
    except ClusterError as exc:
        return {"error": str(exc)}
    if not args.json:
        for name, entry in out.items():
            mine = "this machine: its holders are the ones listed below" if entry["this_machine"] else ""
            print(f"node {name}: " + (entry["error"] or mine))
            for h in entry.get("holders") or []:
                print(f"{h['pid']:>7} {_na(h['used_mib']):>8} MiB {h['class']:<7} {h['command'][:70]}")
            if "killed" in entry:
                print(kill_summary(entry["killed"], entry["survivors"], entry["freed_mib"]))
            left = orphans_left_on(entry)
            if left:
                print(f"node {name}: not signalled: {_left_line(left)}")
    return out


def _holder_dict(h: Any, refused: str | None) -> dict[str, Any]:
    """cli.md's holder; one never signalled says why in its `reason`."""
    d = h.to_dict()
    if refused and refused != d["reason"]:
        d["reason"] = f"{d['reason']}; not signalled: {refused}" if d["reason"] else f"not signalled: {refused}"
    return d


def _finish(args: argparse.Namespace, doc: dict[str, Any], blind: bool, left: list[int] | None = None) -> int:
    """Exit status: a listing succeeded once it printed what it saw and why it could not see more (0);
    a kill failed (1) if it was blind (`blind`: no GPU backend), left survivors, did not signal a holder in
    its scope (`left`: another user's orphan, here or on a node), or failed on a node."""
    if args.json:
        print_json(doc)
    elif doc["error"]:  # once, on stderr: the listing above may miss holders, and a kill did nothing
        print(doc["error"] + ("; nothing was signalled" if args.kill and not doc["killed"] else ""),
              file=sys.stderr)
    if not args.kill:
        return 0
    from eagle_console.ops import orphans_left_on

    nodes = doc.get("nodes") or {}
    node_failed = any(isinstance(e, dict) and (e.get("survivors") or e.get("error") or orphans_left_on(e))
                      for e in nodes.values())
    return 1 if doc["survivors"] or left or blind or node_failed or isinstance(nodes.get("error"), str) else 0
