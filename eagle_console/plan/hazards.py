"""Hazards in a parsed plan that tomllib lets through: values no process or file name can take.

Every walk here is iterative (a plan may be deep or long) and says where each problem is, so the
loader reports it as PLAN:LINE:COL instead of failing later — at run time, or with a bare ValueError.
"""

from __future__ import annotations

import re
import sys
from typing import Any

from eagle_console.plan.tomlpos import Path_
from eagle_console.plan.tomlscan import outside_strings

INT_TOO_LONG = ("integer too long: TOML integers are 64-bit (at most 19 digits); "
                "write a smaller number or a string")
_BIDI = re.compile("[\u202a-\u202e\u2066-\u2069]")  # CVE-2021-42574
Hazard = tuple[Path_, str, str]  # (path, message, "key" | "value")


def document_hazards(doc: dict[str, Any]) -> list[Hazard]:
    """NUL characters in any key or string, bidirectional overrides in any string, and integers too long to print (every message would fail)."""
    found: list[Hazard] = []
    stack: list[tuple[Path_, Any]] = [((), doc)]
    while stack:
        path, value = stack.pop()
        if isinstance(value, dict):
            for key, item in value.items():
                if "\x00" in key:
                    found.append(((*path, key), "a key holds a NUL character (\\u0000); remove it", "key"))
                stack.append(((*path, key), item))
        elif isinstance(value, list):
            stack.extend(((*path, i), item) for i, item in enumerate(value))
        elif isinstance(value, str) and "\x00" in value:
            found.append((path, "a NUL character (\\u0000) cannot be passed to a process or a file name; "
                                "remove it", "value"))
        elif isinstance(value, str) and (m := _BIDI.search(value)):
            found.append((path, f"a bidirectional override (U+{ord(m.group()):04X}) reorders how this text is "
                                "shown (Trojan Source): what the terminal shows would not be what runs; remove it",
                          "value"))
        elif isinstance(value, int) and not isinstance(value, bool) and not _printable_int(value):
            found.append((path, INT_TOO_LONG, "value"))
    found.reverse()  # the stack visits the document backwards
    return found


def _printable_int(value: int) -> bool:
    """False for an int Python refuses to write in decimal (a 0x/0o/0b literal past 4300 digits)."""
    try:
        str(value)
    except ValueError:
        return False
    return True


def long_int_at(text: str) -> int | None:
    """Offset of the first integer literal longer than Python converts (`tomllib` then raises ValueError).

    Only called after that ValueError, when everything before the literal parsed: the first run of digits
    that long which is not inside a string or a comment is the one.
    """
    limit = sys.get_int_max_str_digits() if hasattr(sys, "get_int_max_str_digits") else 4300
    if limit <= 0:
        return None
    digits = re.compile(rf"[+-]?[0-9][0-9_]{{{limit - 1},}}")
    n, after = len(text), 0  # `after`: the end of the token read last
    for i, c in outside_strings(text):
        if i < after or c is None:
            continue
        if c in "+-0123456789":
            m = digits.match(text, i)
            if m and len(m.group().lstrip("+-").replace("_", "")) > limit:
                return i
            after = i + 1
            while after < n and (text[after].isalnum() or text[after] in "_.:+-"):
                after += 1
        elif c.isalpha() or c == "_":  # a bare key or word: its digits are not a number
            after = i + 1
            while after < n and (text[after].isalnum() or text[after] in "_-"):
                after += 1
    return None


_REF = re.compile(r"\$\{([^}]*)\}")


def self_quoted_vars(command: str) -> list[str]:
    """Names of `${var}` references inside single or double quotes of a `run` shell string.

    The loader shell-quotes each value it inserts; inside the plan's own quotes that quoting is undone
    (`"${v}"` with v = `a"; rm -rf ~; "` runs rm), so a quoted reference is worth a warning. A `$( … )`
    starts a command of its own, unquoted even inside "…" (`"$(wc -l < ${f})"` is safe): each nesting keeps
    its own quote.
    """
    names: list[str] = []
    quotes: list[str | None] = [None]  # the quote open at each $( … ) or ( … ) nesting, outermost first
    i = 0
    while i < len(command):
        c, quote = command[i], quotes[-1]
        if c == "\\" and quote != "'":
            i += 2
            continue
        if command.startswith("$${", i):
            i += 3
            continue
        if quote != "'" and command.startswith("$(", i) or quote is None and c == "(":
            quotes.append(None)
            i += 2 if c == "$" else 1
            continue
        if quote is None and c == ")" and len(quotes) > 1:
            quotes.pop()
            i += 1
            continue
        if c == "$" and quote is not None:
            m = _REF.match(command, i)
            if m:
                names.append(m.group(1))
                i = m.end()
                continue
        if c in "\"'" and quote in (None, c):
            quotes[-1] = None if quote == c else c
        i += 1
    return list(dict.fromkeys(names))
