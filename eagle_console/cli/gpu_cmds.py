"""`gpus` and `orphans`: what holds the GPUs, and killing the orphaned workers."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from eagle_console.cli.common import CliError, add_json, add_sim, print_json, sim_dir


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("gpus", help="GPUs and the processes holding them")
    add_json(p)
    add_sim(p)
    p.set_defaults(func=cmd_gpus)

    p = sub.add_parser("orphans", help="list GPU holders with their class; --kill stops the orphans")
    p.add_argument("plan", nargs="?", help="plan whose runs count as tracked (optional)")
    add_json(p)
    p.add_argument("--kill", action="store_true", help="SIGTERM the orphans, SIGKILL them after --grace")
    p.add_argument("--yes", action="store_true", help="do not ask before killing")
    p.add_argument("--grace", default="10s", help="time between SIGTERM and SIGKILL (default 10s)")
    p.add_argument("--state-dir", default=None, help="journal location override for PLAN")
    add_sim(p)
    p.set_defaults(func=cmd_orphans)


def _na(value: Any, fmt: str = "{:.0f}") -> str:
    return "N/A" if value is None else fmt.format(value)


def cmd_gpus(args: argparse.Namespace) -> int:
    from eagle_console.node.gpus import open_backend
    from eagle_console.node.procs import gpus_document, scan_node

    backend = open_backend(sim_dir(args))
    try:
        sample = backend.sample()
        scan = scan_node(sample, [], device_prefix=backend.device_prefix)
    finally:
        backend.close()
    doc = gpus_document(sample, scan.holders, scan.pid_namespace)
    if args.json:
        print_json(doc)
        return 0
    if sample.error:
        print(f"{sample.backend}: {sample.error}")
    if scan.pid_namespace == "foreign":
        print("container: NVML pids are the host's (holders found by their open device files)")
    for g in doc["gpus"]:
        print(f"{g['index']} {g['name'] or 'N/A'}  {_na(g['memory_used_mib'])}/{_na(g['memory_total_mib'])} MiB  "
              f"{_na(g['utilization_pct'])}%  {_na(g['temperature_c'])}C  "
              f"{_na(g['power_w'])}/{_na(g['power_limit_w'])} W  PCIe {_na(g['pcie_gen'], '{}')}"
              f"x{_na(g['pcie_width'], '{}')}")
        for p in g["processes"]:
            print(f"    {p['pid']:>7} {_na(p['used_mib']):>8} MiB  {p['class']:<7} {p['owner'] or '-':<6} "
                  f"{p['command'][:80]}")
    return 0


def _tracked(args: argparse.Namespace) -> tuple[Any, list]:
    from eagle_console.node.procs import tracked_runs_for

    if not args.plan:
        return None, []
    from eagle_console.cli.common import load_plan

    plan = load_plan(args.plan, args.state_dir)
    return plan, tracked_runs_for(plan)


def _confirm(targets: list) -> bool:
    if not sys.stdin.isatty():
        raise CliError("--kill needs --yes when not run from a terminal")
    pids = " ".join(str(h.pid) for h in targets)
    answer = input(f"send SIGTERM to {len(targets)} orphan(s) ({pids})? [y/N] ")
    return answer.strip().lower() in ("y", "yes")


def cmd_orphans(args: argparse.Namespace) -> int:
    from eagle_console.node.gpus import open_backend
    from eagle_console.node.kill import kill_holders, select_targets
    from eagle_console.node.procs import scan_holders
    from eagle_console.plan.durations import DurationError, parse_duration

    try:
        grace = parse_duration(args.grace)
    except DurationError as exc:
        raise CliError(f"--grace: {exc}") from None
    plan, tracked = _tracked(args)
    backend = open_backend(sim_dir(args))
    try:
        sample = backend.sample()
        holders = scan_holders(sample, tracked, device_prefix=backend.device_prefix)
        doc: dict[str, Any] = {"holders": [h.to_dict() for h in holders], "killed": [], "survivors": [],
                               "freed_mib": {}}
        if sample.error and not args.json:
            print(f"{sample.backend}: {sample.error}", file=sys.stderr)
        if not args.json:
            for h in holders:
                print(f"{h.pid:>7} ppid {h.ppid if h.ppid is not None else '?':>7} {h.user or '?':<8} "
                      f"gpus {','.join(map(str, h.gpus)) or '-':<7} {_na(h.used_mib):>8} MiB {h.cls:<7} "
                      f"{h.owner or '-':<6} {h.reason or '':<28} {h.command[:70]}")
            if not holders:
                print("no GPU holders")
        targets = select_targets(holders, "orphans")
        if args.kill and targets and (args.yes or _confirm(targets)):
            def say(msg: str) -> None:
                print(msg, file=sys.stderr if args.json else sys.stdout, flush=True)

            report = kill_holders(targets, backend=backend, grace=grace, say=say)
            doc.update({k: report[k] for k in ("killed", "survivors", "freed_mib")})
            _journal_kill(plan, report)
            if not args.json:
                print(f"killed {report['killed']}, survivors {report['survivors']}, freed MiB {report['freed_mib']}")
    finally:
        backend.close()
    if args.json:
        print_json(doc)
    return 1 if doc["survivors"] else 0


def _journal_kill(plan: Any, report: dict[str, Any]) -> None:
    """Every kill is journaled (state.md); without a plan there is no journal to write to."""
    if plan is None:
        return
    from eagle_console.cli.common import open_journal

    journal = open_journal(plan)
    try:
        journal.append("kill", None, None, None, **report)
    finally:
        journal.close()
