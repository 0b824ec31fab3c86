"""Text for a terminal measured in cells, for the CLI: a CJK character (and an emoji of East Asian width W)
takes 2 cells, a combining mark or a zero-width format character 0, every other character 1.

The console measures with `tui/cells.py`, which asks Rich so that it agrees with what Textual draws; the
CLI must not import Rich (`tests/test_core_imports.py`: `status` and friends start without it), so it
measures from the standard library's Unicode tables. The two agree on CJK text, the case that matters
here (a path or a command line in Chinese cut at the window's edge); on rarer emoji sequences Rich knows
more, and a line may then be a cell off.
"""

from __future__ import annotations

import unicodedata

ELLIPSIS = "…"


def char_cells(char: str) -> int:
    if char.isascii():
        return 0 if char < " " else 1
    if unicodedata.combining(char) or unicodedata.category(char) in ("Mn", "Me", "Cf"):
        return 0
    return 2 if unicodedata.east_asian_width(char) in ("W", "F") else 1


def cells(text: str) -> int:
    """The width of `text` on a terminal."""
    return len(text) if text.isascii() else sum(map(char_cells, text))


def cut(text: str, width: int) -> str:
    """`text` in at most `width` cells: its tail replaced by an ellipsis when it does not fit."""
    if cells(text) <= width:
        return text
    room, taken = max(0, width - 1), 0
    for i, char in enumerate(text):
        taken += char_cells(char)
        if taken > room:
            return text[:i] + ELLIPSIS
    return text


def _fitting(text: str, room: int) -> int:
    """How many of `text`'s characters fit in `room` cells (at least one: a line always moves on)."""
    taken = 0
    for i, char in enumerate(text):
        taken += char_cells(char)
        if taken > room:
            return max(1, i)
    return len(text)


def wrap(text: str, width: int, first: str = "", rest: str = "") -> list[str]:
    """`text`'s words in lines of at most `width` cells, the first line after `first`, the others after
    `rest`. A word wider than a line (a long path, a sentence in Chinese, which has no spaces) is broken
    across lines, as `textwrap` breaks long words; nothing is dropped."""
    lines: list[str] = []
    line, used = first, cells(first)
    for word in text.split():
        size = cells(word)
        if line.strip() and used + 1 + size > width:
            lines.append(line)
            line, used = rest, cells(rest)
        if line.strip():
            line, used = f"{line} {word}", used + 1 + size
            continue
        while used + cells(word) > width:
            n = _fitting(word, width - used)
            lines.append(line + word[:n])
            word, line, used = word[n:], rest, cells(rest)
        line, used = line + word, used + cells(word)
    if line.strip():
        lines.append(line)
    return lines
