"""Which line and which part of it each screen row of a wrapped log shows (no Textual: plain arithmetic).

A wrapped log of 10,000 lines at 60 columns may have 30,000 rows; `WrapRows` keeps the first row of every
line, so drawing row y is a bisect, appending a batch costs the batch, lines falling off the head cost a
list shift, and only a width change rebuilds the index.

Widths are terminal cells (`tui/cells.py`), not characters: a line of CJK text is twice as wide as it is
long, and a 2-cell character that does not fit a row's last cell starts the next row.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Iterable
from functools import lru_cache

from eagle_console.tui.cells import ELLIPSIS, chop, cut

MAX_ROWS_PER_LINE = 40  # a 64 KiB line would fill screens; the rest is cut with … (the file keeps it)


def wrap(line: str, width: int) -> list[str]:
    """The rows `line` takes at `width` cells: at most MAX_ROWS_PER_LINE, the last ending in … when the line
    goes on."""
    width = max(1, width)
    limit = MAX_ROWS_PER_LINE * width + 1  # characters enough to overflow the rows (each is ≥ 1 cell but marks)
    rows = chop(line[:limit], width)
    if len(rows) > MAX_ROWS_PER_LINE or len(line) > limit:
        rows = rows[:MAX_ROWS_PER_LINE]
        rows[-1] = cut(rows[-1], width - 1) + ELLIPSIS
    return rows


@lru_cache(maxsize=256)
def wrapped(line: str, width: int) -> tuple[str, ...]:
    """`wrap`, kept for the rows on screen: a long line's rows are drawn one `render_line` at a time."""
    return tuple(wrap(line, width))


def rows_of(line: str, width: int) -> int:
    if line.isascii():  # O(1): a cell a character
        return min(MAX_ROWS_PER_LINE, max(1, -(-len(line) // max(1, width))))
    return len(wrap(line, width))


class WrapRows:
    def __init__(self) -> None:
        self.width = 0
        # the first row of line i, counted since the last rebuild: lines dropped from the head move `base`
        # instead of renumbering every line after them
        self.starts: list[int] = []
        self.base = 0
        self.end = 0

    @property
    def total(self) -> int:
        return self.end - self.base

    def rebuild(self, lines: Iterable[str], width: int) -> None:
        self.width, self.starts, self.base, self.end = max(1, width), [], 0, 0
        self.append(lines)

    def append(self, lines: Iterable[str]) -> None:
        starts, end, width = self.starts, self.end, self.width
        for line in lines:
            starts.append(end)
            if line.isascii():  # rows_of's ASCII case inline: a rebuild runs this 10,000 times
                end += min(MAX_ROWS_PER_LINE, -(-len(line) // width) or 1)
            else:
                end += rows_of(line, width)
        self.end = end

    def drop_head(self, count: int) -> int:
        """Forget the first `count` lines (fallen off a bounded buffer); returns how many rows they had."""
        if count <= 0:
            return 0
        new_base = self.starts[count] if count < len(self.starts) else self.end
        dropped, self.base = new_base - self.base, new_base
        del self.starts[:count]
        return dropped

    def locate(self, row: int) -> tuple[int, int]:
        """(line index, row within that line) of screen row `row` (0 ≤ row < total)."""
        at = row + self.base
        index = bisect_right(self.starts, at) - 1
        return index, at - self.starts[index]
