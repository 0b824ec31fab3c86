"""What the simulated node's views (clockstep, otherhost, netfs, hidepid) share: a command run with a
temporary file to bind over part of /proc, and their command line — an option that says what the command is
shown, `--`, the command; run it in its namespaces, or say why that cannot be done here."""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable
from typing import Any


def run_with_file(content: bytes, prefix: str, command: Callable[[str], list[str]],
                  **popen: Any) -> subprocess.CompletedProcess:
    """Run `command(path)` to its end, `path` a temporary file holding `content` (what the view binds over a
    file of /proc), removed afterwards; `popen` as subprocess.run's."""
    fd, path = tempfile.mkstemp(prefix=prefix)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(content)
        return subprocess.run(command(path), **popen)
    finally:
        os.unlink(path)


def probe(root_for: str, call: Callable[[], subprocess.CompletedProcess],
          tools: tuple[str, ...] = ("unshare",)) -> tuple[str | None, subprocess.CompletedProcess | None]:
    """What every view's `usable()` checks first: root (`root_for` says what for), its tools, and a probe run
    (`call()`) that started and ended in time. (why not, None), or (None, the probe's result) for the view
    to judge."""
    if os.geteuid() != 0:
        return f"needs root ({root_for})", None
    if any(shutil.which(tool) is None for tool in tools):
        return "no " + " or ".join(f"{tool}(1)" for tool in tools), None
    try:
        return None, call()
    except (OSError, subprocess.TimeoutExpired) as e:
        return f"unshare failed: {e}", None


def main(argv: list[str] | None, *, prog: str, doc: str, flag: str, flag_kw: dict[str, Any],
         usable: Callable[[], str | None], run: Callable[..., subprocess.CompletedProcess]) -> int:
    """`run(command, value of flag)` once `usable()` says it can be done; its exit status."""
    ap = argparse.ArgumentParser(prog=prog, description=doc.split("\n\n")[0])
    ap.add_argument(flag, **flag_kw)
    ap.add_argument("cmd", nargs=argparse.REMAINDER, help="-- then the command")
    args = ap.parse_args(argv)
    cmd = args.cmd[1:] if args.cmd[:1] == ["--"] else args.cmd
    if not cmd:
        ap.error("a command to run is needed after --")
    if why := usable():
        print(f"{prog}: cannot do it here: {why}", file=sys.stderr)
        return 2
    return run(cmd, getattr(args, flag.lstrip("-").replace("-", "_"))).returncode
