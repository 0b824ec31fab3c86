"""`eagle-console serve` on a shared node, attacked the way a second local user would: a real server on
127.0.0.1, a throwaway user made by the test (useradd; runuser runs their client and their `ps`), raw
sockets for requests no client library would send, real consoles up to the limit."""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import httpkit
import pytest
from servekit import TOKEN, as_user, local_user, python_for, raw_request, served, status_of

from eagle_console.ports import free_port

pytest.importorskip("textual_serve", reason="the `serve` extra is not installed: pip install '.[serve]'")

PLAN = '[plan]\nid = "srv"\ntitle = "served"\n\n[[phase]]\nid = "p"\ntitle = "P"\n  [[phase.step]]\n  id = "p.1"\n' \
       '  title = "one"\n'
DEFAULT_MAX_CONSOLES = 4  # docs/cli.md: "--max-consoles N (default 4)"
WS_HEADERS = {"Connection": "Upgrade", "Upgrade": "websocket", "Sec-WebSocket-Version": "13",
              "Sec-WebSocket-Key": "dGhlIHNhbXBsZSBub25jZQ=="}

# What the other user runs (stdlib only, by the same interpreter): the page and the websocket that would
# start a console, without the token and with a guessed one. A 101 reply is a console started for them.
STRANGER = """
import http.client, json, sys
port, ws_headers = int(sys.argv[1]), json.loads(sys.argv[2])
def get(path, headers):
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    conn.request("GET", path, headers=headers)
    reply = conn.getresponse()
    if reply.status != 101:
        reply.read()
    conn.close()
    return reply.status
origin = {"Origin": f"http://127.0.0.1:{port}"}
print(json.dumps({"page": get("/", {}), "console": get("/ws", {**ws_headers, **origin}),
                  "guessed": get("/ws?token=guessed-token-1", {**ws_headers, **origin})}))
"""


@pytest.fixture
def plan(tmp_path: Path) -> Path:
    path = tmp_path / "plan.toml"
    path.write_text(PLAN)
    return path


@pytest.fixture
def stranger() -> str:
    if os.geteuid() != 0:
        pytest.skip("needs root: the test creates a second local user (useradd) and runs as it (runuser)")
    if not (shutil.which("useradd") and shutil.which("userdel") and shutil.which("runuser")):
        pytest.skip("useradd, userdel or runuser is missing (Debian: the passwd and util-linux packages)")
    with local_user() as name:
        yield name


def test_another_local_user_gets_no_console_on_loopback(plan: Path, stranger: str) -> None:
    port = free_port()
    with served([str(plan)], port):
        python = python_for(stranger)
        if python is None:
            pytest.skip(f"no Python that user {stranger} may run (ours is {sys.executable})")
        out = as_user(stranger, [python, "-I", "-c", STRANGER, str(port), json.dumps(WS_HEADERS)])
        assert out.returncode == 0, out.stderr
        assert json.loads(out.stdout) == {"page": 401, "console": 401, "guessed": 401}
        # the operator, with the token, still gets one
        owner = httpkit.get(f"http://127.0.0.1:{port}/", headers={"Authorization": f"Bearer {TOKEN}"})
        assert owner.status_code == 200


def test_the_token_is_not_in_ps_for_another_user(plan: Path, stranger: str, tmp_path: Path) -> None:
    port = free_port()
    with served([str(plan)], port) as proc:  # the token in EAGLE_CONSOLE_TOKEN, as docs/cli.md says
        assert httpkit.get(f"http://127.0.0.1:{port}/", headers={"Authorization": f"Bearer {TOKEN}"}).status_code == 200
        assert httpkit.get(f"http://127.0.0.1:{port}/").status_code == 401
        seen = as_user(stranger, ["ps", "-eo", "pid,args"])
        assert seen.returncode == 0, seen.stderr
        assert f"{proc.pid} " in seen.stdout and "serve" in seen.stdout  # they do see the server
        assert TOKEN not in seen.stdout
        environ = as_user(stranger, ["cat", f"/proc/{proc.pid}/environ"])
        assert environ.returncode != 0 and TOKEN not in environ.stdout  # the environment is the owner's alone


def consoles_in_session(sid: int) -> list[int]:
    """The console processes (`eagle_console tui`) the server started: they share its session."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            argv = (entry / "cmdline").read_bytes().split(b"\0")
            if os.getsid(int(entry.name)) == sid and b"eagle_console" in argv and b"tui" in argv:
                found.append(int(entry.name))
        except OSError:  # gone meanwhile
            continue
    return found


def test_consoles_do_not_inherit_the_token(plan: Path) -> None:
    import aiohttp

    async def console_environ(port: int, sid: int) -> list[bytes]:
        base = f"http://127.0.0.1:{port}"
        async with aiohttp.ClientSession() as session:
            ws = await session.ws_connect(f"{base}/ws", headers={"Authorization": f"Bearer {TOKEN}", "Origin": base})
            await asyncio.wait_for(ws.receive(), 300)  # the console is up
            environs = [Path(f"/proc/{pid}/environ").read_bytes() for pid in consoles_in_session(sid)]
            await ws.close()
        return environs

    port = free_port()
    with served([str(plan)], port) as proc:
        environs = asyncio.run(console_environ(port, proc.pid))
    assert len(environs) == 1
    assert b"EAGLE_CONSOLE_TOKEN" not in environs[0] and TOKEN.encode() not in environs[0]


def test_a_token_on_the_command_line_is_refused(plan: Path) -> None:
    secret = "argv-token-7d1e55"
    out = subprocess.run([sys.executable, "-m", "eagle_console", "serve", str(plan), "--token", secret,
                          "--port", str(free_port())], capture_output=True, text=True, timeout=60)
    assert out.returncode == 2, out.stdout
    assert "shown to every user" in out.stderr and "--token-file" in out.stderr
    assert secret not in out.stderr + out.stdout


def test_a_token_file_must_be_private(plan: Path, tmp_path: Path) -> None:
    token_file = tmp_path / "token"
    token_file.write_text("file-token-0c4b9e\n")
    token_file.chmod(0o644)
    cmd = [sys.executable, "-m", "eagle_console", "serve", str(plan), "--token-file", str(token_file)]
    out = subprocess.run([*cmd, "--port", str(free_port())], capture_output=True, text=True, timeout=60)
    assert out.returncode == 2
    assert f"{token_file}: the token file is readable by others (mode 0644); chmod 600" in out.stderr
    token_file.chmod(0o600)
    port = free_port()
    with served([str(plan), "--token-file", str(token_file)], port, token=None) as proc:
        base = f"http://127.0.0.1:{port}"
        assert httpkit.get(f"{base}/", headers={"Authorization": "Bearer file-token-0c4b9e"}).status_code == 200
        assert httpkit.get(f"{base}/").status_code == 401
    assert "file-token-0c4b9e" not in proc.stdout.read()  # a given token is never printed


def test_the_access_log_has_no_token(plan: Path) -> None:
    port = free_port()
    with served([str(plan)], port) as proc:
        base = f"http://127.0.0.1:{port}"
        first = httpkit.get(f"{base}/?token={TOKEN}&fontsize=12")  # the cookie is set, the address bar loses it
        page = httpkit.get(f"{base}/?fontsize=12", cookies=first.cookies, headers={"Referer": f"{base}/?token={TOKEN}"})
        static = httpkit.get(f"{base}/static/css/xterm.css?token={TOKEN}")
    out = proc.stdout.read()
    assert TOKEN not in out
    assert (first.status_code, page.status_code, static.status_code) == (302, 200, 200)
    assert "GET /?token=<redacted>&fontsize=12" in out  # the requests are logged, their tokens are not


def test_a_request_without_host_gets_a_plain_400(plan: Path) -> None:
    port = free_port()
    with served([str(plan)], port):
        for version in (b"1.1", b"1.0"):
            reply = raw_request(port, b"GET /?token=" + TOKEN.encode() + b" HTTP/" + version +
                                b"\r\nAuthorization: Bearer " + TOKEN.encode() + b"\r\nConnection: close\r\n\r\n")
            assert (version, status_of(reply)) == (version, 400)


def test_a_malformed_request_logs_no_traceback_and_no_secret(plan: Path) -> None:
    secret = "bearer-secret-93be01"
    port = free_port()
    with served([str(plan)], port) as proc:
        reply = raw_request(port, b"GET / HTTP/1.1\r\nAuthorization: Bearer " + secret.encode() +
                            b"\r\nConnection: close\r\n\r\n")
        assert status_of(reply) == 400
    out = proc.stdout.read()
    assert "Missing 'Host' header" in out  # logged, in one line
    assert secret not in out and "Traceback" not in out and "Authorization" not in out


def test_an_origin_on_another_loopback_port_is_refused(plan: Path) -> None:
    port, other = free_port(), free_port()
    bearer = {"Authorization": f"Bearer {TOKEN}"}
    with served([str(plan)], port):
        base = f"http://127.0.0.1:{port}"
        # a page on 127.0.0.1:OTHER is same-site to the browser (it sends the cookie), not same-origin
        for path, extra in (("/", {}), ("/ws", WS_HEADERS)):
            refused = httpkit.get(f"{base}{path}", headers={**bearer, **extra, "Origin": f"http://127.0.0.1:{other}"})
            assert (path, refused.status_code) == (path, 403)
        assert httpkit.get(f"{base}/", headers={**bearer, "Origin": base}).status_code == 200


READING: set[asyncio.Task] = set()


async def keep_reading(ws, first: asyncio.Future) -> None:
    """Read WS until it closes, as a browser tab does: aiohttp's client answers the server's pings only
    inside receive(), and the server (heartbeat=15) closes a socket whose pong is 7.5 s late. Left unread
    while other consoles started on a loaded machine, such a socket was closed under the test."""
    try:
        async for msg in ws:
            if not first.done():
                first.set_result(msg)
    except Exception as exc:  # noqa: BLE001 - before the first screen: the test's failure; after, the caller's
        if first.done():
            raise
        first.set_exception(exc)
    if not first.done():
        first.set_result(ws.close_code)


async def open_consoles(port: int, count: int, close: bool = True) -> tuple[list, object]:
    """COUNT websockets, each with its console's first output; then what the next handshake got."""
    import aiohttp

    base = f"http://127.0.0.1:{port}"
    headers = {"Authorization": f"Bearer {TOKEN}", "Origin": base}
    session = aiohttp.ClientSession()
    sockets, firsts, readers = [], [], []
    for _ in range(count):
        ws = await session.ws_connect(f"{base}/ws?width=80&height=24", headers=headers)
        first = asyncio.get_running_loop().create_future()
        sockets.append(ws)
        firsts.append(first)
        readers.append(asyncio.create_task(keep_reading(ws, first)))
        READING.add(readers[-1])  # the loop holds tasks weakly: kept until they end
        readers[-1].add_done_callback(READING.discard)
    # a console process is up behind each: its first screen bytes arrive
    for msg in await asyncio.wait_for(asyncio.gather(*firsts), 300):
        assert getattr(msg, "type", None) in (aiohttp.WSMsgType.BINARY, aiohttp.WSMsgType.TEXT), msg
    if not close:  # the consoles stay, their connections open (and read): the caller's
        return [session], sockets
    try:
        extra = await session.ws_connect(f"{base}/ws?width=80&height=24", headers=headers)
        await extra.close()
        refused: object = "a console was started"
    except aiohttp.WSServerHandshakeError as exc:
        refused = exc.status
    page = await session.get(f"{base}/", headers=headers)
    text = await page.text()
    for ws in sockets:
        await ws.close()
    await asyncio.gather(*readers)
    await session.close()
    return [refused, page.status, text], sockets


def test_a_13th_console_is_refused(plan: Path) -> None:
    port = free_port()
    with served([str(plan), "--max-consoles", "12"], port) as proc:
        (refused, page_status, text), _ = asyncio.run(open_consoles(port, 12))
    assert (refused, page_status) == (503, 503)
    assert "12 consoles are open, the most this server allows (--max-consoles 12)" in text
    assert "refused a console" in proc.stdout.read()


def test_consoles_beyond_the_default_limit_are_refused(plan: Path) -> None:
    port = free_port()
    with served([str(plan)], port):
        (refused, page_status, _), _ = asyncio.run(open_consoles(port, DEFAULT_MAX_CONSOLES))
        assert (refused, page_status) == (503, 503)
        # the tabs closed: once their consoles have stopped, their places are free again
        end, status = time.monotonic() + 120, None
        while status != 200 and time.monotonic() < end:
            time.sleep(0.2)
            status = httpkit.get(f"http://127.0.0.1:{port}/", headers={"Authorization": f"Bearer {TOKEN}"}).status_code
        assert status == 200


@pytest.mark.parametrize("how", ["SIGTERM to the server", "Ctrl+C in its terminal"])
def test_consoles_stop_with_the_server(plan: Path, how: str) -> None:
    """The server stopped, its tabs still open, ends its consoles too: SIGTERM to the server alone (a service
    manager), or Ctrl+C in its terminal (SIGINT to the whole foreground group, consoles included). Before, a
    console whose server went first never exited (stdin at EOF, its exit blocked on a dead pipe): the twelve
    of test_a_13th_console_is_refused were found running an hour later."""
    import psutil

    port = free_port()

    async def scenario(server: subprocess.Popen) -> list:
        (session,), sockets = await open_consoles(port, 2, close=False)
        consoles = [p for p in psutil.Process(server.pid).children(recursive=True) if "tui" in p.cmdline()]
        assert len(consoles) == 2, consoles
        if how.startswith("SIGTERM"):
            os.kill(server.pid, signal.SIGTERM)  # the server only, not its process group; the tabs stay open
        else:
            os.killpg(server.pid, signal.SIGINT)
        await asyncio.get_running_loop().run_in_executor(None, lambda: server.wait(60))
        _gone, alive = psutil.wait_procs(consoles, timeout=30)
        said = [what_it_does(p) for p in alive]  # for the failure: seen once in a suite run, not alone
        for p in alive:  # leave nothing behind, whatever the verdict
            p.kill()
        await session.close()
        return said

    with served([str(plan)], port) as proc:
        assert asyncio.run(scenario(proc)) == []


def what_it_does(proc) -> str:
    """A console left running: its state and, where py-spy can attach, each thread's Python stack."""
    try:
        head = f"pid {proc.pid} {proc.status()} {' '.join(proc.cmdline())}"
    except Exception as exc:  # noqa: BLE001 - gone meanwhile
        return f"pid {proc.pid}: {exc!r}"
    spy = Path(sys.executable).with_name("py-spy")
    if not spy.exists():
        return head
    try:
        dump = subprocess.run([str(spy), "dump", "--pid", str(proc.pid)], capture_output=True, text=True, timeout=20)
        return f"{head}\n{dump.stdout}{dump.stderr}"
    except (OSError, subprocess.SubprocessError) as exc:
        return f"{head} (py-spy: {exc!r})"
