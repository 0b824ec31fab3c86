"""Who may reach a served console: only a browser that holds the token, on loopback too.

Every browser tab that connects starts a console with the operator's rights (it can run steps and kill GPU
processes), so loopback is no boundary: on a shared node every local user can connect to 127.0.0.1. The
token is therefore always required (generated when not given, as Jupyter does), and it never travels on
the command line, where `ps` shows it to every user. On loopback the Host header must name loopback too (a
web page cannot rebind its own name to 127.0.0.1: DNS rebinding), and a request whose Origin is not this
very server (scheme, host and port) is refused: a page on another loopback port is another origin.
"""

from __future__ import annotations

import hmac
import ipaddress
import os
import re
import secrets
import stat
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

COOKIE = "eagle_console_token"
MIN_TOKEN = 8
LOOPBACK_NAMES = ("localhost",)
DEFAULT_PORTS = {"http": 80, "https": 443, "ws": 80, "wss": 443}
REDACTED = "<redacted>"
# `token=…` in a query string (a URL, a request line, a Referer) and `Bearer …` in a header
_SECRET_PATTERNS = (re.compile(r"(?i)(\btoken=)[^&\s\"']+"), re.compile(r"(?i)(\bbearer\s+)[^\s\"',]+"))


def is_loopback(host: str) -> bool:
    """127.0.0.0/8, ::1 and `localhost`; a name that merely resolves there does not count."""
    name = host.strip("[]").lower()
    if name in LOOPBACK_NAMES or name.endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(name).is_loopback
    except ValueError:
        return False


def host_of(header: str) -> str:
    """The host part of a Host header or an Origin URL (`[::1]:8000` → `::1`)."""
    if "//" in header:
        return (urlsplit(header).hostname or "").lower()
    return (urlsplit(f"//{header}").hostname or "").lower()


def origin_of(url: str, scheme: str = "http") -> tuple[str, str, int | None] | None:
    """(scheme, host, port) with the scheme's default port filled in; None for what is no origin."""
    try:
        parts = urlsplit(url if "//" in url else f"{scheme}://{url}")
        port = parts.port
    except ValueError:  # a port out of range or not a number
        return None
    if not parts.hostname:
        return None
    scheme = parts.scheme.lower()
    return scheme, parts.hostname.lower(), port if port is not None else DEFAULT_PORTS.get(scheme)


def same_origin(origin: str, host_header: str, scheme: str = "http") -> bool:
    """The Origin names this server exactly: same scheme, host and port as the URL the browser asked."""
    theirs, ours = origin_of(origin), origin_of(host_header, scheme)
    return theirs is not None and theirs == ours


def redact(text: str) -> str:
    """`text` with every `token=…` value and `Bearer …` credential replaced (for logs)."""
    for pattern in _SECRET_PATTERNS:
        text = pattern.sub(lambda m: m.group(1) + REDACTED, text)
    return text


def new_token() -> str:
    return secrets.token_urlsafe(24)


class AccessError(ValueError):
    """The token given does not make a safe server."""


def check_token(token: str, source: str) -> str:
    token = token.strip()
    if len(token) < MIN_TOKEN:
        raise AccessError(f"{source}: the token must be at least {MIN_TOKEN} characters")
    if any(c.isspace() or not c.isprintable() for c in token):
        raise AccessError(f"{source}: the token must be one word of printable characters")
    return token


def token_from_file(path: Path) -> str:
    """The token in PATH, a regular file of ours that no one else can read (as ssh wants of a key)."""
    try:
        info = path.stat()
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise AccessError(f"{path}: cannot read the token file: {getattr(exc, 'strerror', None) or exc}") from None
    if not stat.S_ISREG(info.st_mode):
        raise AccessError(f"{path}: the token file is not a regular file")
    if info.st_uid != os.geteuid():
        raise AccessError(f"{path}: the token file belongs to uid {info.st_uid}, not to you")
    if info.st_mode & 0o077:
        raise AccessError(f"{path}: the token file is readable by others (mode {stat.S_IMODE(info.st_mode):04o});"
                          f" chmod 600 {path}")
    lines = [line for line in text.splitlines() if line.strip()]
    if len(lines) != 1:
        raise AccessError(f"{path}: the token file must hold one line (the token), not {len(lines)}")
    return check_token(lines[0], str(path))


@dataclass(frozen=True)
class Access:
    host: str
    token: str
    generated: bool = False  # printed in the URL at start; a given token never is

    @classmethod
    def decide(cls, host: str, token: str | None) -> Access:
        """The token given, or a fresh one; an empty or short token is refused."""
        if token is None:
            return cls(host, new_token(), generated=True)
        return cls(host, check_token(token, "the token"))

    @property
    def loopback(self) -> bool:
        return is_loopback(self.host)

    def token_ok(self, *candidates: str | None) -> bool:
        want = self.token.encode()
        return any(c is not None and hmac.compare_digest(c.encode(), want) for c in candidates)

    def refusal(self, *, host_header: str | None, origin: str | None,
                tokens: tuple[str | None, ...]) -> tuple[int, str] | None:
        """(HTTP status, reason) when a request must be refused, else None."""
        if not host_header:
            return 400, "a Host header is required"
        if self.loopback and not is_loopback(host_of(host_header)):
            return 403, "this console listens on loopback only; use a loopback address (or an SSH tunnel)"
        if origin is not None and not same_origin(origin, host_header):
            return 403, "a request from another origin is refused"
        if not self.token_ok(*tokens):
            return 401, "a token is required: open the URL `eagle-console serve` printed (…/?token=…)"
        return None
