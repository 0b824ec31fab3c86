"""Text measured in terminal cells, not characters: a CJK character and most emoji take 2 cells, a combining
mark 0. Measured as Rich measures it (`rich.cells`), which is what Textual draws with.

Pure-ASCII text is one cell a character and CPython tells it in O(1) (`str.isascii`), so it never pays for
the measuring; other text pays a lookup per character (cached) and a bisect per row.
"""

from __future__ import annotations

from bisect import bisect_right
from itertools import accumulate

from rich import cells as rich_cells
from rich.cells import cell_len, get_character_cell_size

ELLIPSIS = "…"
_JOINERS = ("\u200d", "\ufe0f")  # a ZWJ sequence or VS16 emoji: its width is not the sum of its characters'
# A Rich with `split_graphemes` measures a grapheme whole (👨‍👩‍👧 is 2 cells); older Rich, as Textual then draws it, adds up its
# characters (6 cells), so there every text is "simple". Rich's `chop_cells` is no help across versions:
# before 14 it returned the rows' characters in reverse order.
_SPLIT_GRAPHEMES = getattr(rich_cells, "split_graphemes", None)


class _Widths(dict):
    """Cells of one character, looked up at C speed once seen (`map(_WIDTHS.__getitem__, text)`)."""

    def __missing__(self, char: str) -> int:
        width = self[char] = get_character_cell_size(char)
        return width


_WIDTHS = _Widths()


def cells(text: str) -> int:
    """The width of `text` on a terminal."""
    return len(text) if text.isascii() else cell_len(text)


def _simple(text: str) -> bool:
    """True when the sum of the characters' widths is the text's width (no emoji joiners, or a Rich that adds
    up characters anyway)."""
    return _SPLIT_GRAPHEMES is None or not any(j in text for j in _JOINERS)


def _graphemes(text: str) -> list[str]:
    """`text` as Rich's graphemes (an emoji with its joiners is one), for a text that is not `_simple`."""
    spans, _ = _SPLIT_GRAPHEMES(text)
    return [text[start:end] for start, end, _cells in spans]


def chop(text: str, width: int) -> list[str]:
    """`text` cut into rows of at most `width` cells, in order, never splitting a character: a 2-cell character
    that does not fit a row's last cell starts the next row. Always at least one row ("" for "")."""
    width = max(1, width)
    if text.isascii():
        return [text[i:i + width] for i in range(0, len(text), width)] or [""]
    if _simple(text):
        units: str | list[str] = text
        ends = list(accumulate(map(_WIDTHS.__getitem__, text)))  # ends[i]: cells up to and with text[i]
    else:
        units = _graphemes(text)
        ends = list(accumulate(map(cell_len, units)))
    rows: list[str] = []
    start, used = 0, 0
    while start < len(units):
        stop = bisect_right(ends, used + width, start)  # the units that fit (0-cell ones included)
        if stop == start:  # one character wider than the whole row (2 cells in a 1-cell pane)
            rows.append(" " * width)
            stop = start + 1
        else:
            rows.append("".join(units[start:stop]))
        used, start = ends[stop - 1], stop
    return rows or [""]


def cut(text: str, width: int) -> str:
    """The longest start of `text` within `width` cells (a wide character that would cross the edge is left
    out, so the result may be one cell short)."""
    if width <= 0:
        return ""
    if text.isascii():
        return text[:width]
    head = text[:2 * width + 8]  # enough characters for `width` cells unless most are 0-cell marks
    if len(head) < len(text) and cell_len(head) <= width:
        head = text
    if cell_len(head) <= width:
        return head
    first = chop(head, width)[0]
    return first if head.startswith(first) else ""  # not even its first character fits (2 cells in 1)


def ellipsise(text: str, width: int) -> str:
    """`text` within `width` cells, its end replaced by … when it does not fit."""
    if width <= 0:
        return ""
    if cells(text) <= width:
        return text
    return cut(text, width - 1) + ELLIPSIS


def pad(text: str, width: int) -> str:
    """`text` padded with spaces to `width` cells (cut first if it is wider)."""
    if cells(text) > width:
        text = cut(text, width)
    return text + " " * (width - cells(text))


def window(text: str, start: int, width: int) -> str:
    """The cells [start, start + width) of `text`, exactly `width` cells: a wide character cut by either edge
    shows as spaces (a log scrolled sideways)."""
    if text.isascii():
        return text[start:start + width].ljust(width)
    head = text[:2 * (start + width) + 8]  # enough characters unless most are 0-cell marks
    if _simple(head):
        units: list[str] = list(head)
        ends = list(accumulate(map(_WIDTHS.__getitem__, head)))
    else:  # joined emoji: Rich's graphemes, each measured whole
        units = _graphemes(head)
        ends = list(accumulate(map(cell_len, units)))
    first = bisect_right(ends, start)  # the first unit ending after `start`
    lead = ""
    if first < len(units) and ends[first] - cells(units[first]) < start:  # it begins left of the window
        lead, first = " " * (ends[first] - start), first + 1
    return pad(lead + "".join(units[first:]), width)
