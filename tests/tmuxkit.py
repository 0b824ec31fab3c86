"""The console in a real terminal: one tmux session at a fixed size, keys in with send-keys, the screen
out with capture-pane. Used by tests/e2e and by benchmarks/captures_80x24.py (which re-makes docs/captures).

Each Term has a tmux server of its own (`tmux -L NAME`). On the one default server, a Term closing its
session let the server exit (it ends with its last session) just as another test's `new-session` reached
it, and that one failed (a tmux test and the two-host head-kill test run in different xdist workers)."""

from __future__ import annotations

import contextlib
import re
import subprocess
import time
import uuid

try:
    from reaperkit import not_adopting as _not_adopting
except ImportError:  # benchmarks/captures_80x24.py: no reaper there
    _not_adopting = contextlib.nullcontext


class Term:
    """`patience` multiplies every timeout (the e2e tests run last on the 2-core CI machine); `poll_s` is
    how often the screen is read while waiting (the captures script times the verdict at 0.1 s)."""

    def __init__(self, command: str, size: tuple[int, int], *, env: dict[str, str] | None = None,
                 prefix: str = "ec-e2e", poll_s: float = 0.25, key_pause_s: float = 0.15,
                 patience: float = 1.0) -> None:
        self.name = f"{prefix}-{uuid.uuid4().hex[:8]}"
        self._tmux = ("tmux", "-L", self.name)  # a server of its own, on its own socket
        self.size = size
        self.poll_s, self.key_pause_s, self.patience = poll_s, key_pause_s, patience
        # COLUMNS/LINES in the environment win over the terminal's size (Python's shutil.get_terminal_size,
        # which Textual asks): a pytest process exports 80x24 (readline sets them in the C environment, which
        # a child inherits), so a "120x40" console drew itself at 80x24 and never followed the resize.
        if env:
            command = "env " + " ".join(f"{k}={v}" for k, v in env.items()) + f" {command}"
        command = f"unset COLUMNS LINES; {command}"  # tmux runs it with sh -c
        w, h = size
        with _not_adopting():  # tmux's server, if this starts it, is PID 1's child (tests/reaperkit.py)
            subprocess.run([*self._tmux, "new-session", "-d", "-s", self.name, "-x", str(w), "-y", str(h), command],
                           check=True)
        # A detached session otherwise follows tmux's default size (80x24), whatever -x/-y said.
        subprocess.run([*self._tmux, "set-option", "-t", self.name, "window-size", "manual"], capture_output=True)
        subprocess.run([*self._tmux, "resize-window", "-t", self.name, "-x", str(w), "-y", str(h)], capture_output=True)

    def screen(self) -> str:
        return subprocess.run([*self._tmux, "capture-pane", "-p", "-t", self.name], capture_output=True,
                              text=True).stdout

    def keys(self, *keys: str) -> None:
        for k in keys:
            subprocess.run([*self._tmux, "send-keys", "-t", self.name, k], check=True)
            time.sleep(self.key_pause_s)

    def wait(self, pattern: str, timeout: float = 30.0) -> str:
        timeout *= self.patience
        rx = re.compile(pattern, re.M)
        deadline = time.monotonic() + timeout
        text = ""
        while time.monotonic() < deadline:
            text = self.screen()
            if rx.search(text):
                return text
            time.sleep(self.poll_s)
        raise AssertionError(f"{pattern!r} not on screen within {timeout}s; screen was:\n{text}")

    def wait_gone(self, pattern: str, timeout: float = 10.0) -> None:
        """Until `pattern` is off the screen: a key sent right after Escape would arrive as Alt+key."""
        rx = re.compile(pattern)
        deadline = time.monotonic() + timeout * self.patience
        while rx.search(self.screen()):
            if time.monotonic() > deadline:
                raise AssertionError(f"{pattern!r} still on screen after {timeout}s:\n{self.screen()}")
            time.sleep(self.poll_s)

    def close(self) -> None:
        subprocess.run([*self._tmux, "kill-server"], capture_output=True)  # its server: this session's only


def step_done(step: str) -> str:
    """A step's row in the plan tree once it completed (✔, with or without its `!` hint)."""
    return rf"✔\s*!?\s*{re.escape(step)}\s"
