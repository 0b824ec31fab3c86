"""Text safe to show on a terminal: control characters found, and escaped before printing.

A title or a note holding ESC, an OSC sequence or a carriage return would drive the operator's terminal
(recolour it, retitle it, overwrite a line, or write the clipboard) when the CLI prints it or the console
shows it. The plan refuses such text (`plan.builder`); anything read back from the journal — notes,
results, run logs' paths — goes through `printable` on both faces, the CLI and the console.
"""

from __future__ import annotations

import re

# C0 controls but tab and newline, DEL, C1 controls (U+0080-U+009F: CSI, OSC, ST on their own), and the
# bidirectional overrides and isolates (U+202A-202E, U+2066-2069) that reorder what the operator reads
# ("Trojan Source", CVE-2021-42574): a title or command shown in an order other than the one that runs.
_BIDI = "\u202a-\u202e\u2066-\u2069"
_CONTROL = re.compile(f"[\\x00-\\x08\\x0b-\\x1f\\x7f-\\x9f{_BIDI}]")
_CONTROL_OR_LAYOUT = re.compile(f"[\\x00-\\x1f\\x7f-\\x9f{_BIDI}]")


def _escape(m: re.Match[str]) -> str:
    code = ord(m.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def printable(text: str, *, multiline: bool = True) -> str:
    """`text` with every control character written as a visible `\\xNN` escape.

    Newlines and tabs are kept when `multiline`; a carriage return is always escaped (it rewrites a line).
    """
    pattern = _CONTROL if multiline else _CONTROL_OR_LAYOUT
    return pattern.sub(_escape, text)


def first_control(text: str, *, multiline: bool = False) -> int | None:
    """Index of the first control character in `text` (tab and newline allowed when `multiline`), else None.

    A Windows line end (CR LF) in multi-line text is a line end, not a control character.
    """
    pattern = _CONTROL if multiline else _CONTROL_OR_LAYOUT
    for m in pattern.finditer(text):
        if multiline and m.group() == "\r" and text.startswith("\n", m.end()):
            continue
        if not multiline and m.group() == "\t":
            continue
        return m.start()
    return None


def describe_char(ch: str) -> str:
    """A control character by a name the operator recognises: ESC, NUL, CR, else its code."""
    names = {"\x1b": "ESC", "\x00": "NUL", "\r": "CR", "\n": "a newline", "\x07": "BEL", "\x9b": "CSI",
             "\x9d": "OSC", "\x7f": "DEL", "\x08": "backspace"}
    if "\u202a" <= ch <= "\u202e" or "\u2066" <= ch <= "\u2069":
        return f"bidirectional override U+{ord(ch):04X}"
    return names.get(ch, f"control character U+{ord(ch):04X}")
