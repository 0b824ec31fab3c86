"""`metrics PLAN [--service STEP] [--json] [--watch]`: the followed service's live `/metrics` (ops/metrics.py)."""

from __future__ import annotations

import argparse
import json
import sys
import time
from typing import Any

from eagle_console.cli.common import CliError, add_json, add_state_dir, load_plan, print_json, read_journal

WATCH_S = 1.0  # the console's refresh


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("metrics", help="the followed SGLang service's /metrics: tok/s, accept length, queue, "
                       "KV usage, TTFT/ITL, alarms")
    p.add_argument("plan", metavar="PLAN")
    p.add_argument("--service", metavar="STEP", help="the service step to read (default: the latest service run, "
                   "else the plan's first service step)")
    p.add_argument("--watch", action="store_true", help=f"read every {WATCH_S:g} s until ^C, one line (with "
                   "--json: one JSON document per line) per reading; alarms that must hold for a while need it")
    add_json(p)
    add_state_dir(p)
    p.set_defaults(func=cmd_metrics)


def cmd_metrics(args: argparse.Namespace) -> int:
    from eagle_console.ops.metrics import MetricsWatch, read_once, service_problem

    plan = load_plan(args.plan, args.state_dir)
    problem = service_problem(plan, args.service)
    if problem is not None:
        raise CliError(problem)
    journal = read_journal(plan)
    if not args.watch:  # one reading, as the agent's `metrics` tool takes it
        try:
            doc = read_once(plan, journal, args.service)
        finally:
            journal.close()
        print_json(doc) if args.json else _print(doc, full=True)
        return _exit_code(doc)
    watch = MetricsWatch(plan, journal, args.service, follow_selection=args.service is None)
    try:
        shown: set[tuple[str, str]] = set()
        while True:
            doc = watch.poll()
            if args.json:
                sys.stdout.write(json.dumps({"schema": 1, **doc}, default=str) + "\n")
                sys.stdout.flush()
            else:
                _print_line(doc, shown)
            time.sleep(WATCH_S)
    finally:
        watch.close()
        journal.close()


def _exit_code(doc: dict[str, Any]) -> int:
    """1 when the server could not be read or an alarm is an error (cli.md: a finding of severity error)."""
    return 1 if doc.get("error") or any(f["severity"] == "error" for f in doc["findings"]) else 0


def _print(doc: dict[str, Any], full: bool) -> None:
    from eagle_console.ops.metrics import describe

    print(f"{doc.get('service') or '—'} · {doc.get('url') or 'no URL'}")
    print(describe(doc))
    if full and doc.get("ranks"):
        print("schedulers exporting: " + ", ".join(doc["ranks"]))
    for f in doc["findings"]:
        print(f"{f['severity']:7} {f['code']:20} {f['message']}")


def _print_line(doc: dict[str, Any], shown: set[tuple[str, str]]) -> None:
    """One line per reading; a finding is printed when it is raised, and again only after it cleared."""
    from eagle_console.ops.metrics import describe

    stamp = time.strftime("%H:%M:%S", time.localtime(doc["at"])) if doc.get("at") else "--:--:--"
    print(f"{stamp} {describe(doc)}")
    now = {(f["code"], f["severity"]) for f in doc["findings"]}
    for f in doc["findings"]:
        if (f["code"], f["severity"]) not in shown:
            print(f"{stamp} {f['severity']} {f['code']}: {f['message']}")
    shown.clear()
    shown.update(now)
    sys.stdout.flush()
