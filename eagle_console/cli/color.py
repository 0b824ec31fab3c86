"""Colour for the CLI's own output: plain ANSI codes (the CLI never imports Rich or Textual).

`--color auto|always|never` picks; `auto` colours only a terminal, and only when NO_COLOR is unset or
empty (https://no-color.org) and TERM is not `dumb`. `always` wins over NO_COLOR: the operator asked.
Statuses get the console tree's colours (tui/labels.py), so a step reads the same in both.
"""

from __future__ import annotations

import os
import sys
from typing import TextIO

MODES = ("auto", "always", "never")

# SGR codes for the console tree's styles: green, yellow, (none), bold red, dim, magenta.
STATUS_SGR = {
    "completed": "32", "in_progress": "33", "pending": "", "failed": "1;31", "skipped": "2",
    "rolled_back": "35", "ready": "32", "lost": "1;31",
}

_mode = "auto"


def configure(mode: str | None) -> None:
    """Set the mode for this process (main() calls it once with `--color`)."""
    global _mode
    _mode = mode if mode in MODES else "auto"


def enabled(stream: TextIO | None = None, mode: str | None = None,
            environ: os._Environ[str] | dict[str, str] | None = None) -> bool:
    """Whether to colour what goes to `stream` (stdout by default)."""
    mode = mode or _mode
    if mode == "always":
        return True
    if mode == "never":
        return False
    env = os.environ if environ is None else environ
    if env.get("NO_COLOR") or env.get("TERM") == "dumb":
        return False
    stream = sys.stdout if stream is None else stream
    try:
        return stream.isatty()
    except (AttributeError, ValueError):  # a closed or odd stream: no colour
        return False


def paint(text: str, sgr: str, stream: TextIO | None = None) -> str:
    """`text` wrapped in the SGR code when colour is on (and the code is not empty)."""
    if not sgr or not enabled(stream):
        return text
    return f"\x1b[{sgr}m{text}\x1b[0m"


def status(text: str, state: str, stream: TextIO | None = None) -> str:
    """`text` in the colour the console's tree gives `state` (a step/phase status)."""
    return paint(text, STATUS_SGR.get(state, ""), stream)
