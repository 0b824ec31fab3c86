"""`mcp PLAN`: the console's operations for an AI agent over MCP (stdio); `approve PLAN RUN`: a person's
answer to what an agent asked (docs/agent.md)."""

from __future__ import annotations

import argparse
from pathlib import Path

from eagle_console.cli.common import (
    CliError,
    add_json,
    add_sim,
    add_state_dir,
    load_plan,
    open_journal,
    print_json,
)


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "mcp", help="serve PLAN's operations to an AI agent (Model Context Protocol over stdio)",
        description="A Model Context Protocol server on stdin/stdout for an agent's MCP configuration: tools "
        "for the plan's status and next step, run, wait, mark, note, rollback, logs, GPUs and orphans, server and "
        "NCCL summaries, drafter checks, extraction, results, todowrite; what touches the GPUs or starts a service "
        "waits for a person's approval (a console's a key, or `eagle-console approve`). Needs the agent extra: "
        "pip install 'eagle-console[agent]'. docs/agent.md.",
    )
    p.add_argument("plan")
    p.add_argument("--no-approvals", action="store_true",
                   help="the agent's runs, rollbacks and kills start at once, with nobody asked (unattended)")
    add_sim(p)
    add_state_dir(p)
    p.set_defaults(func=cmd_mcp)

    p = sub.add_parser(
        "approve", help="approve (and start) or deny what an agent asked; without RUN, list what waits",
        description="Approve the request RUN (the id an agent's run, rollback or kill waits under: status "
        "--json `approvals`, the console's Detail line): what it asked starts now, from here, recorded as the "
        "agent's, the approval as yours. --deny refuses it: nothing starts, and the agent is told who denied it.",
    )
    p.add_argument("plan")
    p.add_argument("run", nargs="?", type=int, metavar="RUN", help="the request's id")
    p.add_argument("--deny", action="store_true", help="deny it: nothing is started")
    p.add_argument("--note", metavar="TEXT", help="why (shown to the agent and on every console)")
    add_json(p)
    add_sim(p)
    add_state_dir(p)
    p.set_defaults(func=cmd_approve)


def cmd_mcp(args: argparse.Namespace) -> int:
    from eagle_console.cli.common import sim_dir

    plan = load_plan(args.plan, args.state_dir)  # a bad plan is said here, before any client connects
    sim = sim_dir(args)
    try:
        from eagle_console.mcp.server import serve
    except ImportError as exc:
        raise CliError(f"mcp needs the agent extra (the MCP SDK): pip install 'eagle-console[agent]' ({exc})") from None
    return serve(plan.path, state_dir=Path(args.state_dir) if args.state_dir else None, sim_dir=sim,
                 approvals=not args.no_approvals)


def cmd_approve(args: argparse.Namespace) -> int:
    from eagle_console.cli.common import sim_dir
    from eagle_console.engine.runner import Engine
    from eagle_console.journal import Refused
    from eagle_console.ops import approvals
    from eagle_console.ops.hints import Hints

    plan = load_plan(args.plan, args.state_dir)
    sim = sim_dir(args)
    journal = open_journal(plan)
    try:
        if args.run is None:
            waiting = approvals.open_requests(journal)
            if args.json:
                print_json({"approvals": [a.to_json() for a in waiting]})
            for a in [] if args.json else waiting:
                print(approvals.request_text(a, Hints(approve=f" (eagle-console approve {args.plan} {a.id})")))
            if not waiting and not args.json:
                print("no request awaits approval")
            return 0
        if journal.approval(args.run) is None:  # an id the journal never gave is bad input, as an unknown step
            raise CliError(f"no request {args.run} in plan {plan.id}'s journal; "
                           f"eagle-console approve {args.plan} lists those waiting")
        try:
            req = approvals.decide(Engine(plan, journal), args.run, not args.deny, args.note, sim)
        except Refused as exc:
            raise CliError(str(exc), code=1) from None
        if args.json:
            print_json({"approval": req.to_json(), "message": approvals.outcome_text(req)})
        else:
            print(approvals.outcome_text(req))
        return 1 if (req.outcome or {}).get("error") else 0
    finally:
        journal.close()
