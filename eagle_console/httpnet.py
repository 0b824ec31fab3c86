"""The one HTTP path (httpx) for readiness probes, `http.wait` and the SGLang client.

- Loopback never goes through a proxy: with HTTP_PROXY set and no NO_PROXY, 127.0.0.1 traffic went to the
  proxy and every probe failed (issue #18). For a loopback host the environment's proxies are ignored.
- Redirects are not followed: a probe's answer is the probed origin's, not another host's.
- A probe reads the status line and headers only (never the body: a 1.5 GB response took 6 GB of memory
  and a slow-drip body defeated the timeout), under one deadline for the whole request.
"""

from __future__ import annotations

import functools
import ipaddress
import threading
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

from eagle_console._httpx import httpx

if TYPE_CHECKING:
    import ssl  # httpx imports it only when a client is made: so does this module

CONNECT_S = 1.0


def shown_url(url: str) -> str:
    """`url` for a log line or a message: a password in it (`http://user:PW@host/`) shown as `***`.

    A step's log can end up where others read it (a node's Ray job log); the URL itself still works."""
    try:
        parts = urlsplit(url)
        if parts.password is None:
            return url
        user = parts.username or ""
        host = parts.netloc.rpartition("@")[2]
        return parts._replace(netloc=f"{user}:***@{host}").geturl()
    except ValueError:
        return url


def is_loopback(url: str) -> bool:
    host = (urlsplit(url).hostname or "").strip("[]")
    if host == "localhost" or host.endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


@functools.lru_cache(maxsize=2)
def _verify(trust_env: bool) -> ssl.SSLContext:
    """httpx's default TLS verification, built once a process: a Client given none builds its own, reading
    and parsing the CA bundle (~20 ms of CPU), and a probe makes a Client each time (`http.wait` polls)."""
    return httpx.create_ssl_context(verify=True, trust_env=trust_env)


def _client(trust_env: bool, **kwargs) -> httpx.Client:  # noqa: ANN003 (httpx.Client's own keywords)
    return httpx.Client(trust_env=trust_env, verify=_verify(trust_env), follow_redirects=False, **kwargs)


def client(base_url: str, timeout: float) -> httpx.Client:
    """A client for one origin: no proxy for loopback, no redirects, connect and read timeouts apart."""
    return _client(not is_loopback(base_url), base_url=base_url,
                   timeout=httpx.Timeout(timeout, connect=min(CONNECT_S * 5, timeout)))


def probe(url: str, deadline_s: float = 2.0) -> int | None:
    """The status `url` answers with (headers only), or None when nothing answered within `deadline_s`."""
    result: list[int | None] = [None]

    def ask() -> None:
        try:
            with _client(not is_loopback(url),
                         timeout=httpx.Timeout(deadline_s, connect=min(CONNECT_S, deadline_s))) as c:
                with c.stream("GET", url) as resp:  # the body is never read
                    result[0] = resp.status_code
        except (httpx.HTTPError, ValueError, OSError):
            pass

    worker = threading.Thread(target=ask, daemon=True, name="probe")
    worker.start()
    worker.join(deadline_s)  # one deadline for the whole request, however slowly the server answers
    return result[0]
