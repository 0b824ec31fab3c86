"""`eagle-console serve PLAN`: the console in a browser (textual-serve, the optional `serve` extra).

Each browser tab runs `eagle-console tui PLAN` with the same options; loopback unless `--host` says
otherwise, and then only with a token (eagle_console/serve/access.py says why).
"""

from __future__ import annotations

import argparse
import shlex
import sys
from pathlib import Path

from eagle_console.cli.common import CliError, add_sim, add_state_dir, load_plan, sim_dir

MISSING = "the browser console needs textual-serve: pip install 'eagle-console[serve]'"


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "serve", help="serve the console on PLAN to a web browser (loopback unless --host)",
        description="Serves the console over HTTP with textual-serve: each browser tab runs `eagle-console tui "
        "PLAN` with the same options. Listens on 127.0.0.1; to listen elsewhere give --host, and a token is "
        "then required (--token, or one is generated and printed in the URL). Needs the `serve` extra.",
    )
    p.add_argument("plan", metavar="PLAN", help="the plan file")
    p.add_argument("--host", default="127.0.0.1", metavar="ADDR",
                   help="listen address (default 127.0.0.1; anything but loopback requires a token)")
    p.add_argument("--port", type=int, default=8000, help="listen port (default 8000)")
    p.add_argument("--token", default=None, metavar="TOKEN",
                   help="require this token (?token= once, then a cookie); generated off loopback if not given")
    p.add_argument("--readonly", action="store_true", help="watch only: every key that changes anything is off")
    add_sim(p)
    add_state_dir(p)
    p.set_defaults(func=cmd_serve)


def console_command(args: argparse.Namespace, plan: Path) -> str:
    """The shell command textual-serve runs per tab: this interpreter, so the same install serves."""
    argv = [sys.executable, "-m", "eagle_console", "tui", str(plan)]
    if args.readonly:
        argv.append("--readonly")
    sim = sim_dir(args)
    if sim is not None:
        argv += ["--sim", str(sim)]
    if args.state_dir:
        argv += ["--state-dir", str(Path(args.state_dir).resolve())]
    return shlex.join(argv)


def banner(access, port: int, plan: Path) -> list[str]:
    shown = f"[{access.host}]" if ":" in access.host else access.host
    url = f"http://{shown}:{port}/" + (f"?token={access.token}" if access.token else "")
    lines = [f"eagle-console serve: {plan} on {url}"]
    if not access.loopback:
        lines.append("listening off loopback: only a browser given the token gets in; plain HTTP, so use it on "
                     "a trusted network or tunnel it (ssh -L)")
    return lines + ["Ctrl+C stops the server (consoles' runs keep running under their supervisors)"]


def cmd_serve(args: argparse.Namespace) -> int:
    try:  # the interface layer's wrapper; it imports textual-serve (the optional extra)
        from eagle_console.tui.served import ConsoleServer
    except ImportError as exc:
        if (exc.name or "").split(".")[0] in ("textual_serve", "aiohttp"):
            raise CliError(MISSING) from None
        raise
    from eagle_console.serve.access import Access, AccessError

    plan_path = Path(args.plan).resolve()
    load_plan(plan_path, args.state_dir)  # a bad plan fails here, not in every browser tab
    try:
        access = Access.decide(args.host, args.token)
    except AccessError as exc:
        raise CliError(str(exc)) from None
    server = ConsoleServer(console_command(args, plan_path), access=access, port=args.port,
                           title=f"eagle-console {plan_path.name}", banner=banner(access, args.port, plan_path))
    server.serve()
    return 0
