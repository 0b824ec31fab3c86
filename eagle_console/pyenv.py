"""How the console starts its own Python processes without its import path leaking into the steps.

A step's environment is the operator's plus the plan's `[env]` and the step's `env`: a step running
SGLang's own Python must not import the console's httpx or numpy. The console's own processes (the
supervisor, a built-in action) run under `sys.executable`, which finds this package by itself when it
is installed. Only a source checkout that is not installed needs help: its root goes first on their
PYTHONPATH, marked in EAGLE_CONSOLE_OWN_PYTHONPATH so that they take it out again before they start
anything else (the supervisor its action, a built-in action the server it execs).
"""

from __future__ import annotations

import os
import site
import sys
from collections.abc import Mapping
from pathlib import Path

OWN_ENTRY_VAR = "EAGLE_CONSOLE_OWN_PYTHONPATH"
ACTION_MODULE = "eagle_console.engine.action"
# A built-in's call (its `with` table: a URL with a password) reaches its process here, not on its argv,
# which every local user reads (`ps`); a process's environment is its own user's (/proc/PID/environ, 0400).
CALL_VAR = "EAGLE_CONSOLE_CALL"
SITE_DIR_NAMES = ("site-packages", "dist-packages")


def package_root() -> Path:
    """The directory holding this copy of `eagle_console`: a checkout, or a site-packages when installed."""
    return Path(__file__).resolve().parents[1]


def _site_dirs() -> set[Path]:
    dirs = [*site.getsitepackages(), site.getusersitepackages()] if hasattr(site, "getsitepackages") else []
    return {Path(d).resolve() for d in dirs}


def own_entry() -> str | None:
    """The PYTHONPATH entry our own processes need: the checkout root, or None when installed."""
    root = package_root()
    if root.name in SITE_DIR_NAMES or root in _site_dirs():
        return None  # installed (pip, pipx, uv tool): sys.executable imports it as it is
    return str(root)


def own_process_env(base: Mapping[str, str], entry: str | None = None) -> dict[str, str]:
    """`base` for a process of ours: (source checkout only) its root first on PYTHONPATH, and marked."""
    env = without_own_entry(base)
    entry = entry if entry is not None else own_entry()
    if entry is None:
        return env
    env["PYTHONPATH"] = os.pathsep.join(p for p in (entry, env.get("PYTHONPATH")) if p)
    env[OWN_ENTRY_VAR] = entry
    return env


def without_own_entry(env: Mapping[str, str]) -> dict[str, str]:
    """`env` as the operator had it: the PYTHONPATH entry we added (if any) taken out again."""
    out = dict(env)
    entry = out.pop(OWN_ENTRY_VAR, None)
    if not entry:
        return out
    parts = out.get("PYTHONPATH", "").split(os.pathsep)
    if entry in parts:
        parts.remove(entry)  # the first one: ours; an operator's own copy of it stays
    rest = os.pathsep.join(p for p in parts if p)
    if rest:
        out["PYTHONPATH"] = rest
    else:
        out.pop("PYTHONPATH", None)
    return out


def forget_own_entry() -> None:
    """Take our entry out of this process's environment: what it starts gets the operator's PYTHONPATH."""
    clean = without_own_entry(os.environ)
    for key in set(os.environ) - set(clean):
        del os.environ[key]
    os.environ.update(clean)


def builtin_argv(call_json: str) -> list[str]:
    """The command of a built-in action as a spec keeps it (the spec is 0600): this interpreter, this
    package, the call. `child_command` moves the call into the environment when the process starts."""
    return [sys.executable, "-m", ACTION_MODULE, "--call", call_json]


def is_builtin_argv(argv: list[str]) -> bool:
    return argv[1:3] == ["-m", ACTION_MODULE]


def child_command(argv: list[str], overrides: Mapping[str, str]) -> tuple[list[str], dict[str, str]]:
    """The argv and environment a supervisor starts `argv` with: a built-in's call goes into CALL_VAR and
    its argv keeps only the built-in's name (`--uses NAME`, for `ps` and the GPU pane)."""
    env = child_env(argv, overrides)
    if is_builtin_argv(argv) and argv[3:4] == ["--call"] and len(argv) > 4:
        env[CALL_VAR] = argv[4]
        argv = [*argv[:3], "--uses", builtin_name(argv)]
    return argv, env


def builtin_name(argv: list[str]) -> str:
    """The `uses` name of a built-in's argv (from its call), "?" when unreadable."""
    import json

    try:
        return str(json.loads(argv[argv.index("--call") + 1])["uses"])
    except (ValueError, IndexError, KeyError, TypeError):
        return "?"


def shown(argv: list[str]) -> str:
    """`argv` for a log line: a built-in as `built-in NAME`, never its call (its `with` values)."""
    if is_builtin_argv(argv):
        return f"built-in {builtin_name(argv)}"
    return " ".join(argv)


def child_env(argv: list[str], overrides: Mapping[str, str]) -> dict[str, str]:
    """The environment of a process a supervisor starts: its own (the operator's), then the spec's
    overrides; a built-in action of a source checkout also gets the checkout root."""
    env = {**without_own_entry(os.environ), **overrides}
    return own_process_env(env) if is_builtin_argv(argv) else env
