"""A served console (`eagle-console serve` as a real subprocess), a throwaway second local user, raw HTTP,
and a headless Chromium driven over the DevTools protocol (aiohttp's websocket client: textual-serve
already depends on aiohttp)."""

from __future__ import annotations

import asyncio
import base64
import contextlib
import itertools
import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

TOKEN = "test-token-4f9c2a7e1b"  # what served() gives the server (EAGLE_CONSOLE_TOKEN) unless told otherwise
CHROMIUM_NAMES = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")

# The page keeps its xterm.js Terminal in a closure; the test re-serves textual.js with one more
# statement that hands it to the page, so the screen's text can be read from the terminal's buffer.
TERM_OPENED = "this.terminal.open(e),"
TERM_EXPOSED = TERM_OPENED + "window.__eagleTerm=this.terminal,"
SCREEN_JS = """(() => {
  const t = window.__eagleTerm;
  if (!t) return null;
  const b = t.buffer.active, rows = [];
  for (let i = 0; i < t.rows; i++) {
    const line = b.getLine(b.viewportY + i);
    rows.push(line ? line.translateToString(true) : "");
  }
  return rows.join("\\n");
})()"""


def chromium_binary() -> str | None:
    for name in CHROMIUM_NAMES:
        found = shutil.which(name)
        if found:
            return found
    return None



def wait_for_port(port: int, proc: subprocess.Popen, deadline_s: float = 60.0) -> None:
    end = time.monotonic() + deadline_s
    while time.monotonic() < end:
        if proc.poll() is not None:
            raise AssertionError(f"the server exited ({proc.returncode}): {proc.stdout.read() if proc.stdout else ''}")
        with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), timeout=1):
            return
        time.sleep(0.1)
    raise AssertionError(f"nothing listens on {port} after {deadline_s}s")


def stop_group(proc: subprocess.Popen) -> None:
    """SIGTERM the process group we started (the server and its consoles), SIGKILL what stays."""
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGTERM)
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=10)


@contextlib.contextmanager
def served(args: list[str], port: int, env: dict[str, str] | None = None,
           token: str | None = TOKEN) -> Iterator[subprocess.Popen]:
    """`eagle-console serve ARGS --port PORT`, listening, in a session of its own; its token in
    EAGLE_CONSOLE_TOKEN (None: none given, the server generates one)."""
    cmd = [sys.executable, "-m", "eagle_console", "serve", *args, "--port", str(port)]
    full_env = {**os.environ, "COLUMNS": "200", **(env or {})}
    full_env.pop("EAGLE_CONSOLE_TOKEN", None)
    if token is not None:
        full_env["EAGLE_CONSOLE_TOKEN"] = token
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            env=full_env, start_new_session=True)
    try:
        wait_for_port(port, proc)
        yield proc
    finally:
        stop_group(proc)


def raw_request(port: int, data: bytes) -> bytes:
    """Bytes sent as they are on a fresh connection (no client fixes the request up); the reply until close."""
    with socket.create_connection(("127.0.0.1", port), timeout=30) as s:
        s.sendall(data)
        chunks = []
        while chunk := s.recv(65536):
            chunks.append(chunk)
    return b"".join(chunks)


def status_of(reply: bytes) -> int:
    return int(reply.split(b" ", 2)[1])


@contextlib.contextmanager
def local_user() -> Iterator[str]:
    """A throwaway local user (no home, no login shell), deleted afterwards. Needs root."""
    name = f"ecsrv{secrets.token_hex(4)}"
    subprocess.run(["useradd", "--no-create-home", "--shell", "/usr/sbin/nologin", name], check=True,
                   capture_output=True, timeout=60)
    try:
        yield name
    finally:
        subprocess.run(["userdel", name], check=True, capture_output=True, timeout=60)


def as_user(name: str, argv: list[str], timeout: float = 120) -> subprocess.CompletedProcess:
    """ARGV run as user NAME (runuser: real uid and gid switched, no shell) from a directory they can read."""
    return subprocess.run(["runuser", "-u", name, "--", *argv], capture_output=True, text=True, timeout=timeout,
                          cwd="/")


def python_for(name: str) -> str | None:
    """A Python user NAME may run (ours may lie under root's 0700 home); their client needs the stdlib only."""
    for candidate in (sys.executable, "/usr/bin/python3", "/usr/local/bin/python3"):
        if os.path.exists(candidate) and as_user(name, [candidate, "-I", "-c", "pass"], timeout=60).returncode == 0:
            return candidate
    return None


@contextlib.contextmanager
def chromium(binary: str, profile: Path, size: tuple[int, int] = (1400, 900)) -> Iterator[int]:
    """A headless Chromium with its DevTools port (read from the profile's DevToolsActivePort)."""
    cmd = [binary, "--headless=new", "--no-sandbox", "--disable-gpu", "--no-first-run",
           "--no-default-browser-check", "--disable-extensions", "--remote-debugging-port=0",
           f"--user-data-dir={profile}", f"--window-size={size[0]},{size[1]}", "about:blank"]
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    try:
        active = profile / "DevToolsActivePort"
        end = time.monotonic() + 60
        while not (active.is_file() and active.read_text().strip()):
            if proc.poll() is not None or time.monotonic() > end:
                raise AssertionError(f"chromium gave no DevTools port (exit {proc.poll()})")
            time.sleep(0.1)
        yield int(active.read_text().split()[0])
    finally:
        stop_group(proc)


class DevTools:
    """One page target over the DevTools protocol: commands, and textual.js re-served with TERM_EXPOSED."""

    def __init__(self, ws: Any) -> None:
        self.ws = ws
        self.ids = itertools.count(1)
        self.waiting: dict[int, asyncio.Future] = {}
        self.patched = 0
        self.reader = asyncio.create_task(self._read())

    @classmethod
    async def open_page(cls, session: Any, port: int) -> DevTools:
        async with session.get(f"http://127.0.0.1:{port}/json/list") as r:
            targets = await r.json()
        page = next(t for t in targets if t["type"] == "page")
        return cls(await session.ws_connect(page["webSocketDebuggerUrl"], max_msg_size=0))

    async def send(self, method: str, **params: Any) -> dict:
        msg_id = next(self.ids)
        future = asyncio.get_running_loop().create_future()
        self.waiting[msg_id] = future
        await self.ws.send_json({"id": msg_id, "method": method, "params": params})
        reply = await asyncio.wait_for(future, 60)
        if "error" in reply:
            raise AssertionError(f"{method}: {reply['error']}")
        return reply.get("result", {})

    async def _read(self) -> None:
        async for msg in self.ws:
            data = msg.json()
            if "id" in data:
                self.waiting.pop(data["id"]).set_result(data)
            elif data.get("method") == "Fetch.requestPaused":
                asyncio.get_running_loop().create_task(self._expose_terminal(data["params"]))

    async def _expose_terminal(self, paused: dict) -> None:
        body = await self.send("Fetch.getResponseBody", requestId=paused["requestId"])
        raw = base64.b64decode(body["body"]) if body.get("base64Encoded") else body["body"].encode()
        script = raw.decode()
        self.patched = script.count(TERM_OPENED)
        script = script.replace(TERM_OPENED, TERM_EXPOSED)
        await self.send("Fetch.fulfillRequest", requestId=paused["requestId"], responseCode=200,
                        responseHeaders=[{"name": "Content-Type", "value": "application/javascript"}],
                        body=base64.b64encode(script.encode()).decode())

    async def expose_terminal_on_load(self) -> None:
        await self.send("Fetch.enable", patterns=[{"urlPattern": "*/static/js/textual.js",
                                                   "requestStage": "Response"}])

    async def screen(self) -> str | None:
        result = await self.send("Runtime.evaluate", expression=SCREEN_JS, returnByValue=True)
        return result["result"].get("value")

    async def wait_screen(self, *needles: str, deadline_s: float = 90.0) -> str:
        """The terminal's text once it holds every needle (polls; fails with the last screen)."""
        end = time.monotonic() + deadline_s
        text = None
        while time.monotonic() < end:
            text = await self.screen()
            if text and all(n in text for n in needles):
                return text
            await asyncio.sleep(0.3)
        raise AssertionError(f"the page never showed {needles}; last screen:\n{text}")

    async def press(self, key: str) -> None:
        """A real key press: keyDown (with its text), then keyUp, into the focused terminal."""
        await self.send("Runtime.evaluate", expression="window.__eagleTerm.focus()")
        await self.send("Input.dispatchKeyEvent", type="keyDown", key=key, text=key, unmodifiedText=key)
        await self.send("Input.dispatchKeyEvent", type="keyUp", key=key)

    async def screenshot(self, path: Path) -> bytes:
        shot = base64.b64decode((await self.send("Page.captureScreenshot", format="png"))["data"])
        path.write_bytes(shot)
        return shot

    async def close(self) -> None:
        await self.ws.close()
        self.reader.cancel()
