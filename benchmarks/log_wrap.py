"""The wrapped log view's costs on the event loop: the row index rebuilt over a full 10,000-line buffer (a
width change), one poll's 40-line batch appended to a full buffer (lines falling off the head), and drawing
a 40-row screen (render_line), for ASCII lines and for lines of wide (CJK) characters.

    .venv/bin/python benchmarks/log_wrap.py
"""

from __future__ import annotations

import asyncio
import time

from textual.app import App

from eagle_console.tui.panes.logview import LogView
from eagle_console.tui.panes.wraprows import WrapRows

ASCII = "[2026-01-05 10:27:57 TP0] Decode batch. #running-req: 1, #token: 186, accept len: 1.95, seq {:06d}"
CJK = "模型回答：我们的模型支持中文输出，这是一个很长的句子用于测试换行是否正确。{:06d}"


def best_ms(fn, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return min(times) * 1000


def index_costs(form: str) -> tuple[float, float]:
    lines = [form.format(i) for i in range(10_000)]
    rows = WrapRows()
    rebuild = best_ms(lambda: rows.rebuild(lines, 60), 20)
    batch = [form.format(i) for i in range(10_000, 10_040)]

    def poll() -> None:
        rows.append(batch)
        rows.drop_head(40)

    return rebuild, best_ms(poll, 200)


class Bench(App):
    def compose(self):
        yield LogView()


async def screen_ms(form: str) -> float:
    app = Bench()
    async with app.run_test(size=(64, 44)) as pilot:
        view = app.query_one(LogView)
        view.add_lines([form.format(i) for i in range(10_000)])
        await pilot.pause()
        body = view.body
        height = body.size.height
        return best_ms(lambda: [body.render_line(y) for y in range(height)], 50)


def main() -> None:
    for name, form in (("ascii", ASCII), ("cjk", CJK)):
        rebuild, poll = index_costs(form)
        draw = asyncio.run(screen_ms(form))
        print(f"{name:5}  rebuild 10,000 lines @60: {rebuild:7.3f} ms   40-line batch on a full buffer: "
              f"{poll:6.3f} ms   a 40-row screen: {draw:6.3f} ms")


if __name__ == "__main__":
    main()
