"""`eagle-console serve PLAN`: the console in a browser (textual-serve, the optional `serve` extra).

Each browser tab runs `eagle-console tui PLAN` with the same options, always behind a token, loopback
unless `--host` says otherwise (eagle_console/serve/access.py says why).
"""

from __future__ import annotations

import argparse
import errno
import os
import shlex
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from eagle_console.cli.common import CliError, add_sim, add_state_dir, load_plan, sim_dir
from eagle_console.ports import cannot_listen
from eagle_console.serve import TOKEN_ENV

if TYPE_CHECKING:
    from eagle_console.serve.access import Access

MISSING = "the browser console needs textual-serve: pip install 'eagle-console[serve]'"
DEFAULT_MAX_CONSOLES = 4  # each is a Python process of ~60 MB; twelve tabs were 730 MB
ARGV_TOKEN = (f"--token on the command line is shown to every user of this machine (ps); put the token in "
              f"{TOKEN_ENV} or in a file only you can read (--token-file, mode 0600), or give none and use "
              "the one generated and printed")


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "serve", help="serve the console on PLAN to a web browser, behind a token (loopback unless --host)",
        description="Serves the console over HTTP with textual-serve: each browser tab runs `eagle-console tui "
        f"PLAN` with the same options. Listens on 127.0.0.1 unless --host. A token is always required: from "
        f"{TOKEN_ENV}, from --token-file, or generated and printed in the URL. Needs the `serve` extra.",
    )
    p.add_argument("plan", metavar="PLAN", help="the plan file")
    p.add_argument("--host", default="127.0.0.1", metavar="ADDR",
                   help="listen address (default 127.0.0.1)")
    p.add_argument("--port", type=int, default=8000, help="listen port (default 8000)")
    p.add_argument("--token-file", default=None, metavar="PATH",
                   help=f"read the token from PATH (one line, mode 0600, yours); or set {TOKEN_ENV}; "
                   "without either one is generated and printed in the URL")
    p.add_argument("--token", default=None, metavar="TOKEN", help=argparse.SUPPRESS)  # refused: see ARGV_TOKEN
    p.add_argument("--max-consoles", type=int, default=DEFAULT_MAX_CONSOLES, metavar="N",
                   help=f"consoles (browser tabs) open at once; more are refused (default {DEFAULT_MAX_CONSOLES})")
    p.add_argument("--readonly", action="store_true", help="watch only: every key that changes anything is off")
    add_sim(p)
    add_state_dir(p)
    p.set_defaults(func=cmd_serve)


def console_command(args: argparse.Namespace, plan: Path) -> str:
    """The shell command textual-serve runs per tab: this interpreter, so the same install serves. `exec`: the
    console is the process textual-serve started, not a shell's child, so whatever stops that process (its
    transport closed, our shutdown) stops the console; a console under a shell that was killed ran on."""
    argv = [sys.executable, "-m", "eagle_console", "tui", str(plan)]
    if args.readonly:
        argv.append("--readonly")
    sim = sim_dir(args)
    if sim is not None:
        argv += ["--sim", str(sim)]
    if args.state_dir:
        argv += ["--state-dir", str(Path(args.state_dir).resolve())]
    return "exec " + shlex.join(argv)


def given_token(args: argparse.Namespace) -> str | None:
    """The token from --token-file or the environment (taken out of it: consoles and their steps inherit
    the environment); None when neither gives one. --token on the command line is refused."""
    if args.token is not None:
        raise CliError(ARGV_TOKEN)
    from eagle_console.serve.access import AccessError, token_from_file  # hmac, secrets: serve's own

    from_env = os.environ.pop(TOKEN_ENV, None)
    if args.token_file is not None and from_env is not None:
        raise CliError(f"the token is given twice ({TOKEN_ENV} and --token-file); give one")
    try:
        if args.token_file is not None:
            return token_from_file(Path(args.token_file))
        return from_env
    except AccessError as exc:
        raise CliError(str(exc)) from None


def banner(access: Access, port: int, plan: Path) -> list[str]:
    shown = f"[{access.host}]" if ":" in access.host else access.host
    url = f"http://{shown}:{port}/"
    if access.generated:  # the only way the operator learns it; a given token is never printed
        lines = [f"eagle-console serve: {plan} on {url}?token={access.token}"]
    else:
        lines = [f"eagle-console serve: {plan} on {url}?token=… (the token you gave)"]
    if not access.loopback:
        lines.append("listening off loopback: only a browser given the token gets in; plain HTTP, so use it on "
                     "a trusted network or tunnel it (ssh -L)")
    return lines + ["Ctrl+C stops the server (consoles' runs keep running under their supervisors)"]


def cmd_serve(args: argparse.Namespace) -> int:
    from eagle_console.serve.access import Access, AccessError

    token = given_token(args)
    try:
        access = Access.decide(args.host, token)
    except AccessError as exc:
        raise CliError(str(exc)) from None
    if args.max_consoles < 1:
        raise CliError(f"--max-consoles must be 1 or more, not {args.max_consoles}")
    try:  # the interface layer's wrapper; it imports textual-serve (the optional extra)
        from eagle_console.tui.served import ConsoleServer
    except ImportError as exc:
        if (exc.name or "").split(".")[0] in ("textual_serve", "aiohttp"):
            raise CliError(MISSING) from None
        raise

    plan_path = Path(args.plan).resolve()
    load_plan(plan_path, args.state_dir)  # a bad plan fails here, not in every browser tab
    refused = cannot_listen(access.host, args.port)  # before the URL is printed as if it served
    if refused is not None:
        raise CliError(listen_refusal(access.host, args.port, refused), code=1)
    server = ConsoleServer(console_command(args, plan_path), access=access, port=args.port,
                           title=f"eagle-console {plan_path.name}", banner=banner(access, args.port, plan_path),
                           max_consoles=args.max_consoles)
    try:
        server.serve()
    except OSError as exc:  # taken between the check and aiohttp's bind
        if exc.errno not in (errno.EADDRINUSE, errno.EADDRNOTAVAIL, errno.EACCES):
            raise
        raise CliError(listen_refusal(access.host, args.port, exc), code=1) from None
    return 0


def listen_refusal(host: str, port: int, error: OSError) -> str:
    where = f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
    if error.errno == errno.EADDRINUSE:
        return (f"cannot listen on {where}: another process listens there (ss -ltnp 'sport = :{port}' says "
                "which); give another port with --port")
    if error.errno == errno.EACCES and port < 1024:
        return f"cannot listen on {where}: ports below 1024 need root; give --port 1024 or above"
    reason = error.strerror or str(error)
    return f"cannot listen on {where}: {reason} (is --host an address of this machine?)"
