"""Helpers for engine tests: write a plan, open an engine on it, find a run's processes."""

from __future__ import annotations

import os
import textwrap
import time
from pathlib import Path

import psutil

from eagle_console.engine.runner import Engine
from eagle_console.journal import Journal
from eagle_console.plan.loader import load_plan


def write_plan(folder: Path, body: str, name: str = "plan.toml") -> Path:
    path = folder / name
    path.write_text('[plan]\nid = "t"\ntitle = "test plan"\n\n' + textwrap.dedent(body))
    return path


def engine_for(path: Path) -> Engine:
    plan = load_plan(path)
    return Engine(plan, Journal.for_plan(plan))


def session_pids(sid: int) -> list[int]:
    out = []
    for p in psutil.process_iter():
        try:
            if os.getsid(p.pid) == sid and p.status() != psutil.STATUS_ZOMBIE:
                out.append(p.pid)
        except (OSError, psutil.Error):
            pass
    return out


def wait_for(predicate, timeout: float = 20.0, interval: float = 0.1):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(interval)
    raise AssertionError(f"condition not met within {timeout}s")
