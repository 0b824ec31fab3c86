"""`eagle-console serve` on the demo node, in a real headless Chromium: the page loads, the plan tree and
the GPU rows are on the screen, and a key press reaches the console (`?` opens the keys help). The page is
opened with `?token=` once, as the operator opens the printed URL; the cookie carries the rest.

With EAGLE_CONSOLE_WRITE_SCREENSHOT=1 the first screenshot is saved as docs/captures/serve-chromium.png.
"""

from __future__ import annotations

import asyncio
import os
import shutil
from pathlib import Path

import pytest
from servekit import TOKEN, DevTools, chromium, chromium_binary, served

from eagle_console.ports import free_port

pytest.importorskip("textual_serve", reason="the `serve` extra is not installed: pip install '.[serve]'")
CHROMIUM = chromium_binary()
pytestmark = [
    pytest.mark.slow,
    pytest.mark.browser,
    pytest.mark.skipif(CHROMIUM is None, reason="no chromium binary on PATH (Debian: apt-get install chromium)"),
]

CAPTURE = Path(__file__).resolve().parent.parent / "docs" / "captures" / "serve-chromium.png"
PNG = b"\x89PNG\r\n\x1a\n"


@pytest.fixture
def demo(tmp_path, monkeypatch):
    from eagle_console.demo.build import build_demo, stop_leftovers

    plan = build_demo(tmp_path / "node")
    yield plan, tmp_path / "node" / "sim"
    stop_leftovers(tmp_path / "node")


def test_the_served_console_in_chromium(demo, tmp_path):
    import aiohttp

    plan, sim = demo
    port = free_port()
    (tmp_path / "profile").mkdir()

    async def drive(devtools_port: int) -> tuple[str, str]:
        async with aiohttp.ClientSession() as session:
            page = await DevTools.open_page(session, devtools_port)
            try:
                await page.expose_terminal_on_load()
                await page.send("Page.enable")
                await page.send("Emulation.setFocusEmulationEnabled", enabled=True)
                await page.send("Page.navigate", url=f"http://127.0.0.1:{port}/?token={TOKEN}&fontsize=12")
                # the plan tree (its first steps) and the GPU rows (the demo's 95.6 GiB cards), down to the fourth:
                # on a busy machine the first screen holding them can be laid out for the terminal's size before
                # the browser's (3 cards under it, seen with the suite on 4 xdist workers); the count is below
                main = await page.wait_screen("PLAN", "0.1 Kill any existing", "GPUs", "/95.6 GiB", "3 RTX PRO 6000")
                assert page.patched == 1, "textual.js no longer opens its terminal as the test expects"
                first = await page.screenshot(tmp_path / "served.png")
                await page.press("?")
                help_text = await page.wait_screen("eagle-console — keys", "Kill orphans")
                second = await page.screenshot(tmp_path / "served-help.png")
                assert first.startswith(PNG) and second.startswith(PNG) and first != second
                return main, help_text
            finally:
                await page.close()

    with served([str(plan), "--sim", str(sim)], port), chromium(CHROMIUM, tmp_path / "profile") as devtools:
        main, help_text = asyncio.run(drive(devtools))
    assert "eagle-console — keys" not in main
    gpu_rows = [line for line in main.splitlines() if "/95.6 GiB" in line]
    assert len(gpu_rows) >= 4, main  # the browser window shows at least half of the eight cards
    if os.environ.get("EAGLE_CONSOLE_WRITE_SCREENSHOT"):
        shutil.copyfile(tmp_path / "served.png", CAPTURE)
