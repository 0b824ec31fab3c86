"""Which line and which part of it each screen row of a wrapped log shows (no Textual: plain arithmetic).

A wrapped log of 10,000 lines at 60 columns may have 30,000 rows; `WrapRows` keeps the first row of every
line, so drawing row y is a bisect, appending a batch costs the batch, and only a width change or lines
falling off the head rebuilds the index (once per poll at most).
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
        self.starts: list[int] = []  # the first row of line i
        self.total = 0

    def rebuild(self, lines: Iterable[str], width: int) -> None:
        self.width, self.starts, self.total = max(1, width), [], 0
        self.append(lines)

    def append(self, lines: Iterable[str]) -> None:
        starts, total, width = self.starts, self.total, self.width
        for line in lines:
            starts.append(total)
            total += rows_of(line, width)
        self.total = total

    def locate(self, row: int) -> tuple[int, int]:
        """(line index, row within that line) of screen row `row` (0 ≤ row < total)."""
        index = bisect_right(self.starts, row) - 1
        return index, row - self.starts[index]
