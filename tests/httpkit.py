"""httpx's one-call API (`get`, `post`) for tests, with one TLS context a process.

`httpx.get(url)` makes a Client, and a Client given no `verify` reads and parses the CA bundle: ~30 ms of
CPU a call on the 2-core machine, ~6 CPU-s of a README suite run (py-spy, docs/performance.md), though the
tests only speak plain HTTP to 127.0.0.1. Each call still gets a Client of its own: no cookie or
connection is carried from one request to the next, as with `httpx.get`."""

from __future__ import annotations

import functools
import ssl
from typing import Any

import httpx


@functools.lru_cache(maxsize=1)
def _tls() -> ssl.SSLContext:
    return ssl.create_default_context()


def get(url: str, **kwargs: Any) -> httpx.Response:
    return httpx.get(url, verify=_tls(), **kwargs)


def post(url: str, **kwargs: Any) -> httpx.Response:
    return httpx.post(url, verify=_tls(), **kwargs)
