"""The wrapped-row index of a bounded log buffer: lines falling off the head move the index instead of
rebuilding it over all 10,000 lines at every poll (3.2 ms each on this machine, on the event loop)."""

from __future__ import annotations

import random
from collections import deque

from eagle_console.tui.panes.wraprows import WrapRows


def test_drop_head_leaves_the_index_a_rebuild_would_make():
    rng = random.Random(7)
    keep = 50
    lines: deque[str] = deque(maxlen=keep)
    rows = WrapRows()
    rows.rebuild([], 20)
    for _ in range(40):
        batch = ["x" * rng.randint(0, 130) for _ in range(rng.randint(0, 30))]
        dropped = max(0, len(lines) + len(batch) - keep)
        before = rows.total
        lines.extend(batch)
        rows.append(batch)
        gone = rows.drop_head(dropped)
        fresh = WrapRows()
        fresh.rebuild(lines, 20)
        assert rows.total == fresh.total and len(rows.starts) == len(lines)
        assert gone == before + sum(max(1, -(-len(s) // 20)) for s in batch) - rows.total
        assert [rows.locate(r) for r in range(rows.total)] == [fresh.locate(r) for r in range(fresh.total)]


CJK = "模型回答：我们的模型支持中文输出，这是一个很长的句子用于测试换行是否正确。"  # 38 characters, 76 cells


def test_rows_are_counted_in_cells_not_characters():
    from eagle_console.tui.panes.wraprows import rows_of

    assert rows_of(CJK, 40) == 2  # 76 cells; by characters it was 1 row, drawn 76 cells wide
    assert rows_of("模" * 30, 20) == 3
    assert rows_of("a" + "模" * 10, 20) == 2  # 21 cells: the last 模 does not fit cell 20, it starts row 2
    assert rows_of("🔥" * 10, 5) == 5  # 2 cells each, 2 to a row of 5

    from eagle_console.tui.panes.wraprows import wrap

    assert wrap("a" + "模" * 10, 20) == ["a" + "模" * 9, "模"]


def test_a_line_past_the_row_limit_ends_in_an_ellipsis_within_the_width():
    from rich.cells import cell_len

    from eagle_console.tui.panes.wraprows import MAX_ROWS_PER_LINE, rows_of, wrap

    for line in (CJK * 200, "x" * 10_000, ("ab模🔥" * 2000)):
        rows = wrap(line, 33)
        assert len(rows) == rows_of(line, 33) == MAX_ROWS_PER_LINE
        assert rows[-1].endswith("…") and all(cell_len(r) <= 33 for r in rows)


def test_the_index_of_wide_lines_matches_their_rows():
    from eagle_console.tui.panes.wraprows import wrap

    rng = random.Random(3)
    alphabet = ["a", " ", "模", "：", "🔥", "é"]
    lines = ["".join(rng.choice(alphabet) for _ in range(rng.randint(0, 90))) for _ in range(60)]
    rows = WrapRows()
    rows.rebuild(lines, 17)
    drawn = [(i, part) for i, line in enumerate(lines) for part in range(len(wrap(line, 17)))]
    assert [rows.locate(r) for r in range(rows.total)] == drawn
