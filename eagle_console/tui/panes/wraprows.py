"""Which line and which part of it each screen row of a wrapped log shows (no Textual: plain arithmetic).

A wrapped log of 10,000 lines at 60 columns may have 30,000 rows; `WrapRows` keeps the first row of every
line, so drawing row y is a bisect, appending a batch costs the batch, lines falling off the head cost a
list shift, and only a width change rebuilds the index.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Iterable

MAX_ROWS_PER_LINE = 40  # a 64 KiB line would fill screens; the rest is cut with … (the file keeps it)


def rows_of(line: str, width: int) -> int:
    return min(MAX_ROWS_PER_LINE, max(1, -(-len(line) // width)))


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
