"""Who may reach a served console: loopback by default, a token for anything else.

Every browser tab that connects starts a console with the operator's rights (it can run steps and kill GPU
processes), so a listener off loopback without a secret would hand that to the network. On loopback, the
Host header must name loopback too: a web page the operator visits cannot rebind its own name to 127.0.0.1
and drive the console from the browser (DNS rebinding), and a websocket from another origin is refused.
"""

from __future__ import annotations

import hmac
import ipaddress
import secrets
from dataclasses import dataclass
from urllib.parse import urlsplit

COOKIE = "eagle_console_token"
LOOPBACK_NAMES = ("localhost",)


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


def new_token() -> str:
    return secrets.token_urlsafe(24)


class AccessError(ValueError):
    """The listen address and token given do not make a safe server."""


@dataclass(frozen=True)
class Access:
    host: str
    token: str | None  # None only on loopback: the machine's own users are trusted, as with a terminal

    @classmethod
    def decide(cls, host: str, token: str | None) -> Access:
        """A token is required off loopback (generated when not given); an empty token is refused."""
        if token is not None and len(token) < 8:
            raise AccessError("--token must be at least 8 characters")
        if token is None and not is_loopback(host):
            token = new_token()
        return cls(host, token)

    @property
    def loopback(self) -> bool:
        return is_loopback(self.host)

    def token_ok(self, *candidates: str | None) -> bool:
        if self.token is None:
            return True
        want = self.token.encode()
        return any(c is not None and hmac.compare_digest(c.encode(), want) for c in candidates)

    def refusal(self, *, host_header: str, origin: str | None, tokens: tuple[str | None, ...]) -> tuple[int, str] | None:
        """(HTTP status, reason) when a request must be refused, else None."""
        if self.loopback and not is_loopback(host_of(host_header)):
            return 403, "this console listens on loopback only; use a loopback address (or an SSH tunnel)"
        if origin and host_of(origin) != host_of(host_header):
            return 403, "a request from another origin is refused"
        if not self.token_ok(*tokens):
            return 401, "a token is required: open the URL `eagle-console serve` printed (…/?token=…)"
        return None
