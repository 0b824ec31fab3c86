"""Who may reach `eagle-console serve`: only with the token (401 without it), on loopback too; a loopback
server refuses a Host that is not loopback (DNS rebinding) and other origins. Real servers on real ports,
plain HTTP requests. A second local user, leaked tokens and the console limit: test_serve_shared_node.py."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import clikit
import httpkit
import pytest
from conftest import bound
from servekit import TOKEN, served

from eagle_console.ports import free_port
from eagle_console.serve.access import Access, AccessError, host_of, is_loopback, redact, same_origin

PLAN = '[plan]\nid = "srv"\ntitle = "served"\n\n[[phase]]\nid = "p"\ntitle = "P"\n  [[phase.step]]\n  id = "p.1"\n' \
       '  title = "one"\n'


@pytest.fixture
def plan(tmp_path: Path) -> Path:
    path = tmp_path / "plan.toml"
    path.write_text(PLAN)
    return path


def test_loopback_names() -> None:
    assert all(map(is_loopback, ["127.0.0.1", "127.8.0.1", "::1", "[::1]", "localhost", "a.localhost"]))
    assert not any(map(is_loopback, ["0.0.0.0", "10.0.0.5", "::", "localhost.evil.example", "example.com"]))
    assert host_of("[::1]:8000") == "::1" and host_of("http://Example.com:80") == "example.com"


def test_a_token_is_always_required_and_generated_when_not_given() -> None:
    for host in ("127.0.0.1", "0.0.0.0"):
        generated = Access.decide(host, None)
        assert generated.generated and len(generated.token) >= 24 and generated.token != Access.decide(host, None).token
    given = Access.decide("127.0.0.1", "s3cret-token")
    assert given.token == "s3cret-token" and not given.generated
    for bad in ("short", "", "two words here"):
        with pytest.raises(AccessError):
            Access.decide("0.0.0.0", bad)


def test_an_origin_is_this_server_only_scheme_host_and_port() -> None:
    assert same_origin("http://127.0.0.1:8000", "127.0.0.1:8000")
    assert same_origin("http://localhost", "localhost:80")
    assert same_origin("http://[::1]:8000", "[::1]:8000")
    assert not same_origin("http://127.0.0.1:9000", "127.0.0.1:8000")  # another loopback port: another origin
    assert not same_origin("https://127.0.0.1:8000", "127.0.0.1:8000")
    assert not same_origin("http://localhost:8000", "127.0.0.1:8000")
    assert not same_origin("null", "127.0.0.1:8000") and not same_origin("http://x:99999", "x:99999")


def test_logged_text_loses_its_tokens() -> None:
    line = 'GET /?fontsize=3&token=abc-DEF_123&x=1 HTTP/1.1 "http://h/?token=zzz" Authorization: Bearer qqq.www'
    assert redact(line) == ('GET /?fontsize=3&token=<redacted>&x=1 HTTP/1.1 "http://h/?token=<redacted>" '
                            'Authorization: Bearer <redacted>')


def test_off_loopback_a_request_without_the_token_is_refused(plan: Path) -> None:
    pytest.importorskip("textual_serve", reason="the `serve` extra is not installed")
    port, token = free_port(), "s3cret-token-123"
    with served([str(plan), "--host", "0.0.0.0"], port, token=token):
        base = f"http://127.0.0.1:{port}"
        assert httpkit.get(f"{base}/").status_code == 401
        assert httpkit.get(f"{base}/?token=wrong-token-0").status_code == 401
        assert httpkit.get(f"{base}/static/js/textual.js").status_code == 401
        assert httpkit.get(f"{base}/ws").status_code == 401  # no console is started for a stranger
        # the token once in the URL: a cookie, and the address bar without it
        first = httpkit.get(f"{base}/?token={token}&fontsize=14")
        assert first.status_code == 302 and "token" not in first.headers["location"]
        assert first.cookies.get("eagle_console_token") == token
        page = httpkit.get(f"{base}{first.headers['location']}", cookies=first.cookies)
        assert page.status_code == 200 and "textual-terminal" in page.text
        assert httpkit.get(f"{base}/", headers={"Authorization": f"Bearer {token}"}).status_code == 200


@pytest.mark.parametrize("host", ["127.0.0.1", "0.0.0.0"])
def test_a_generated_token_is_printed_in_the_url_and_required(plan: Path, host: str) -> None:
    pytest.importorskip("textual_serve", reason="the `serve` extra is not installed")
    port = free_port()
    with served([str(plan), "--host", host], port, token=None) as proc:
        base = f"http://127.0.0.1:{port}"
        assert httpkit.get(f"{base}/").status_code == 401
        # the URL is on the first line, printed at startup
        found = re.search(r"\?token=([\w-]+)", proc.stdout.readline())
        assert found
        assert httpkit.get(f"{base}/", headers={"Authorization": f"Bearer {found.group(1)}"}).status_code == 200
    assert ("listening off loopback" in proc.stdout.read()) == (host == "0.0.0.0")


def test_loopback_refuses_a_foreign_host_or_origin(plan: Path) -> None:
    pytest.importorskip("textual_serve", reason="the `serve` extra is not installed")
    port = free_port()
    bearer = {"Authorization": f"Bearer {TOKEN}"}
    with served([str(plan)], port):
        base = f"http://127.0.0.1:{port}"
        page = httpkit.get(f"{base}/", headers=bearer)
        assert page.status_code == 200
        assert f"ws://127.0.0.1:{port}/ws" in page.text  # the page's URLs name the address the browser used
        assert httpkit.get(f"{base}/", headers={"Host": "rebound.example", **bearer}).status_code == 403
        assert httpkit.get(f"{base}/", headers={"Origin": "http://evil.example", **bearer}).status_code == 403
        assert httpkit.get(f"http://localhost:{port}/", headers=bearer).status_code == 200


def test_without_the_extra_it_says_how_to_install_it(plan: Path) -> None:
    # sys.modules[name] = None is how Python is told a module cannot be imported
    code = ("import sys; sys.modules['textual_serve'] = None; from eagle_console.cli import main; "
            f"sys.exit(main(['serve', {str(plan)!r}]))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, env=os.environ)
    assert out.returncode == 2
    assert "pip install 'eagle-console[serve]'" in out.stderr


def test_a_short_token_is_refused_before_listening(plan: Path) -> None:
    pytest.importorskip("textual_serve", reason="the `serve` extra is not installed")
    env = {**os.environ, "EAGLE_CONSOLE_TOKEN": "abc"}
    out = subprocess.run([sys.executable, "-m", "eagle_console", "serve", str(plan), "--host", "0.0.0.0",
                          "--port", str(free_port())], capture_output=True, text=True, timeout=60, env=env)
    assert out.returncode == 2 and "at least 8 characters" in out.stderr


def test_each_tab_runs_the_tui_with_the_same_options(tmp_path: Path) -> None:
    import argparse
    import shlex

    from eagle_console.cli.serve_cmds import console_command
    from eagle_console.sim import gpustate

    gpustate.create_node(tmp_path / "sim", gpus=1)  # a --sim that is no simulated node is refused (exit 2)
    args = argparse.Namespace(readonly=True, sim=str(tmp_path / "sim"), state_dir=str(tmp_path / "st"))
    argv = shlex.split(console_command(args, tmp_path / "my plan.toml"))
    assert argv == ["exec", sys.executable, "-m", "eagle_console", "tui", str(tmp_path / "my plan.toml"), "--readonly",
                    "--sim", str(tmp_path / "sim"), "--state-dir", str(tmp_path / "st")]
    plain = argparse.Namespace(readonly=False, sim=None, state_dir=None)
    assert "--readonly" not in console_command(plain, tmp_path / "p.toml")


def test_a_port_another_process_listens_on_is_said_before_any_url(plan: Path) -> None:
    """The default 8000 is often another server's on a GPU node: it printed the URL as if it served, then
    `internal error: OSError: [Errno 98] …`. Now one line that says so and how to see by whom, exit 1; an
    address not this machine's the same way."""
    pytest.importorskip("textual_serve", reason="the `serve` extra is not installed")
    port = free_port()
    with bound(port) as taken:  # a server on it, as servers bind (a port in TIME_WAIT is a free pick)
        taken.listen(1)
        out = clikit.run(["serve", plan, "--port", port], timeout=60)
    assert out.returncode == 1, out.stderr
    assert "token=" not in out.stdout and "internal error" not in out.stderr
    assert f"cannot listen on 127.0.0.1:{port}: another process listens there (ss -ltnp 'sport = :{port}'" \
        in out.stderr
    out = clikit.run(["serve", plan, "--host", "192.0.2.1", "--port", port], timeout=60)  # TEST-NET-1
    assert out.returncode == 1 and "token=" not in out.stdout
    assert f"cannot listen on 192.0.2.1:{port}: Cannot assign requested address" in out.stderr
