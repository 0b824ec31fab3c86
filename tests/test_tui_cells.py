"""Text cut and wrapped in terminal cells (tui/cells.py): a CJK character and most emoji take 2 cells. Checked
against Rich's measure (`rich.cells.cell_len`), which is what Textual draws with."""

from __future__ import annotations

import random
from itertools import accumulate

import pytest
from rich import cells as rich_cells
from rich.cells import cell_len

from eagle_console.tui.cells import chop, cut, ellipsise, pad, window

CJK = "模型回答：我们的模型支持中文输出，这是一个很长的句子用于测试换行是否正确。"
PIECES = ["a", "b", " ", "-", "模", "型", "：", "é", "e\u0301", "🔥", "👍🏽", "👨\u200d👩\u200d👧", "❤\ufe0f", "한"]


def graphemes(text: str) -> list[str]:
    """What Rich draws as one unit: a grapheme where this Rich knows them, else a character (Rich before
    `split_graphemes` measured, and Textual drew, character by character)."""
    split = getattr(rich_cells, "split_graphemes", None)
    if split is None:
        return list(text)
    return [text[start:end] for start, end, _ in split(text)[0]]


def texts(seed: int, count: int = 300):
    rng = random.Random(seed)
    for _ in range(count):
        yield "".join(rng.choice(PIECES) for _ in range(rng.randint(0, 60)))


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_chop_keeps_every_row_within_the_width_and_every_character(seed):
    rng = random.Random(seed)
    for text in texts(seed):
        width = rng.randint(2, 25)
        rows = chop(text, width)
        assert "".join(rows) == text
        assert all(cell_len(r) <= width for r in rows), (text, width, rows)
        for row, after in zip(rows[:-1], rows[1:], strict=True):  # a row ends only where the next would not fit
            first = graphemes(after)[0]  # an emoji with its joiners, where Rich counts it as one
            assert cell_len(row + first) > width, (text, width, rows)
        bounds = set(accumulate(map(len, graphemes(text)), initial=0))
        assert set(accumulate(map(len, rows), initial=0)) <= bounds, (text, width, rows)  # no split grapheme


def test_a_wide_character_that_misses_the_last_column_starts_the_next_row():
    assert chop("abc模", 4) == ["abc", "模"]
    assert chop("abc模d", 5) == ["abc模", "d"]
    assert chop(CJK, 9) == [CJK[i:i + 4] for i in range(0, len(CJK), 4)]
    assert chop("e\u0301" * 3, 2) == ["e\u0301e\u0301", "e\u0301"]  # a combining accent stays with its letter
    assert chop("", 5) == [""]


def test_a_row_narrower_than_a_wide_character_still_keeps_to_its_width():
    assert all(cell_len(r) <= 1 for r in chop("a模🔥b", 1))


@pytest.mark.parametrize("seed", [4, 5])
def test_cut_ellipsise_pad_and_window_keep_to_their_width(seed):
    rng = random.Random(seed)
    for text in texts(seed):
        width = rng.randint(1, 30)
        c = cut(text, width)
        assert text.startswith(c) and cell_len(c) <= width
        assert cell_len(c) >= width - 1 or c == text  # at most the one cell a wide character could not use
        e = ellipsise(text, width)
        assert cell_len(e) <= width and (e == text or e.endswith("…"))
        assert cell_len(pad(text, width)) == width
        start = rng.randint(0, 40)
        assert cell_len(window(text, start, width)) == width


def test_window_shows_the_cells_scrolled_to_and_blanks_half_a_wide_character():
    assert window("ab模型cd", 0, 4) == "ab模"
    assert window("ab模型cd", 3, 4) == " 型c"  # cell 3 is 模's right half
    assert window("ab模型cd", 2, 6) == "模型cd"
    assert window("ab模型cd", 1, 2) == "b "  # 模 would cross the right edge


def test_labels_ellipsise_counts_cells():
    """The Plan tree's titles and the Detail line's first row: a CJK title at 20 cells, not 20 characters."""
    label_ellipsise = ellipsise  # the Plan tree's and the Detail line's (labels.py, detail.py)

    assert label_ellipsise(CJK, 20) == CJK[:9] + "…"
    assert cell_len(label_ellipsise(CJK, 21)) <= 21
    assert label_ellipsise("short", 20) == "short"
