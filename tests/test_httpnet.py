"""One HTTP path for probes, http.wait and the client: loopback never via a proxy, redirects not followed,
bodies never read by a probe (issue #18). Real servers on 127.0.0.1."""

from __future__ import annotations

import http.server
import os
import threading
import time

import pytest
from test_sglang_bench import ctx_for

from eagle_console.engine.builtins.http_wait import HttpWait
from eagle_console.engine.supervise import http_ok
from eagle_console.httpnet import is_loopback, probe


class Handler(http.server.BaseHTTPRequestHandler):
    def log_message(self, *args) -> None:
        pass

    def do_GET(self) -> None:
        if self.path == "/redirect":
            self.send_response(302)
            self.send_header("Location", f"http://127.0.0.2:{self.server.server_port}/health")
            self.end_headers()
        elif self.path == "/drip":  # headers at once, then a body one byte a second, forever
            self.send_response(200)
            self.send_header("Content-Length", str(6 * 2**30))
            self.end_headers()
            try:
                while not self.server.stopping:
                    self.wfile.write(b"x")
                    self.wfile.flush()
                    time.sleep(1.0)
            except OSError:
                pass
        else:
            self.send_response(200)
            self.send_header("Content-Length", "2")
            self.end_headers()
            self.wfile.write(b"ok")


@pytest.fixture
def server():
    httpd = http.server.ThreadingHTTPServer(("0.0.0.0", 0), Handler)
    httpd.stopping = False
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{httpd.server_port}"
    httpd.stopping = True
    httpd.shutdown()
    httpd.server_close()


@pytest.fixture
def dead_proxy(monkeypatch):
    """HTTP_PROXY set to a port nothing listens on, and no NO_PROXY: what broke every probe."""
    for key in ("NO_PROXY", "no_proxy"):
        monkeypatch.delenv(key, raising=False)
    for key in ("HTTP_PROXY", "http_proxy", "ALL_PROXY", "all_proxy"):
        monkeypatch.setenv(key, "http://127.0.0.1:9")


def test_loopback_is_never_proxied(server, dead_proxy, tmp_path):
    assert os.environ["HTTP_PROXY"]
    # A process's first probe imports httpx and builds its TLS context inside the probe's deadline (2 s by
    # default): in a loaded suite run (.ci/run of c787641) that took longer and the probe said None. Through
    # the dead proxy the answer is None at once whatever the deadline; a long one keeps the test to that.
    assert probe(f"{server}/health", deadline_s=30.0) == 200
    assert http_ok(f"{server}/health")  # the supervisor's readiness probe (urllib went to the proxy)
    ctx = ctx_for(tmp_path, {"url": f"{server}/health", "timeout": "5s"})
    assert HttpWait().run(ctx) == 0  # httpx.get went to the proxy
    assert is_loopback("http://localhost:1/") and is_loopback("http://[::1]:1/")
    assert not is_loopback("http://10.0.0.1/")


def test_a_redirect_off_the_origin_is_not_followed(server):
    assert probe(f"{server}/redirect") == 302
    assert not http_ok(f"{server}/redirect")  # urllib followed it to 127.0.0.2 and said ready


def test_a_dripping_endless_body_does_not_hold_the_probe(server, tmp_path):
    assert probe(f"{server}/drip", deadline_s=2.0) == 200
    ctx = ctx_for(tmp_path, {"url": f"{server}/drip", "timeout": "5s"})
    done: list[int] = []
    t = threading.Thread(target=lambda: done.append(HttpWait().run(ctx)), daemon=True)
    t.start()
    t.join(15)  # httpx.get read the 6 GiB body a byte a second, past any timeout
    assert done == [0]


def test_probes_and_clients_read_the_ca_bundle_once_a_process(server, monkeypatch):
    """Each httpx.Client built its own TLS context, reading and parsing the CA bundle (~20 ms of CPU): a probe
    made one every time (`http.wait` polls), and so did each SGLang client and metrics scrape. Now one a
    process for each proxy setting (loopback: the environment is not trusted)."""
    import ssl

    from eagle_console import httpnet

    loads: list[object] = []
    real = ssl.SSLContext.load_verify_locations

    def counted(self, *args, **kwargs):
        loads.append(args or kwargs)
        return real(self, *args, **kwargs)

    monkeypatch.setattr(ssl.SSLContext, "load_verify_locations", counted)
    for _ in range(3):
        # what is counted is the CA bundle's loads, not the speed: a loaded VM (a suite run) once took the
        # first probe, the TLS context built, past its default 2 s
        assert probe(f"{server}/health", deadline_s=30.0) == 200
        with httpnet.client(server, 5.0) as c:
            assert c.get("/health").status_code == 200
        httpnet.client("http://10.0.0.1:9", 1.0).close()  # not loopback: the environment's settings count
    assert len(loads) <= 2  # none if this process made both already; 9 before
