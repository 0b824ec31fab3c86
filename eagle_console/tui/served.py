"""textual-serve's Server with our access check in front and page URLs taken from the request.

Part of the interface layer (textual-serve runs Textual consoles): the access rules themselves are the
core's (eagle_console/serve/access.py); `eagle-console serve` imports this module only when it runs, and an
ImportError naming textual_serve or aiohttp is the missing `serve` extra.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

import psutil
from aiohttp import hdrs, web
from aiohttp.http_exceptions import HttpProcessingError
from rich.logging import RichHandler
from textual_serve.server import LogHighlighter, Server

from eagle_console.serve.access import COOKIE, Access, redact

log = logging.getLogger("eagle-console.serve")
CONSOLES_STOP_S = 5.0  # what a console gets to quit when the server stops, before SIGKILL
REFUSALS = {400: web.HTTPBadRequest, 401: web.HTTPUnauthorized, 403: web.HTTPForbidden}


def access_middleware(access: Access):
    """Refuse what `Access.refusal` refuses; a good `?token=` on the page sets a cookie that the page's
    own requests (static files, the websocket) then carry, and is dropped from the address bar."""

    @web.middleware
    async def check(request: web.Request, handler: Any) -> web.StreamResponse:
        query_token = request.query.get("token")
        bearer = request.headers.get("Authorization", "").removeprefix("Bearer ").strip() or None
        # request.host would make one up (the machine's name) for a request without a Host header
        refused = access.refusal(host_header=request.headers.get(hdrs.HOST), origin=request.headers.get("Origin"),
                                 tokens=(query_token, request.cookies.get(COOKIE), bearer))
        if refused is not None:
            status, reason = refused
            raise REFUSALS[status](text=f"eagle-console serve: {reason}\n")
        if query_token is not None and request.path == "/":
            rest = {k: v for k, v in request.query.items() if k != "token"}
            redirect = web.HTTPFound(request.rel_url.with_query(rest))
            redirect.set_cookie(COOKIE, query_token, httponly=True, samesite="Strict", path="/")
            raise redirect
        return await handler(request)

    return check


class Redact(logging.Filter):
    """Every record leaves with tokens and bearer credentials redacted. A request aiohttp could not parse
    (no Host header, a malformed line) is one line: its traceback's locals and the message hold the raw bytes."""

    def filter(self, record: logging.LogRecord) -> bool:
        try:
            message = record.getMessage()
        except (TypeError, ValueError):  # a record whose arguments do not fit its format: say the format only
            message = str(record.msg)
        exc = record.exc_info[1] if record.exc_info else None
        if isinstance(exc, HttpProcessingError):
            first = (str(exc.message).strip().splitlines() or [""])[0][:120]
            message = f"{message} ({exc.code}: {first})"
            record.exc_info, record.exc_text, record.levelno, record.levelname = None, None, logging.WARNING, "WARNING"
        record.msg, record.args = redact(message), ()
        return True


def refuse_console(reason: str) -> web.HTTPServiceUnavailable:
    return web.HTTPServiceUnavailable(text=f"eagle-console serve: {reason}\n")


class ConsoleServer(Server):
    """One console process per browser tab, as textual-serve does, at most `max_consoles` at once; ours adds
    the access check and logs that carry no secrets."""

    def __init__(self, command: str, *, access: Access, port: int, title: str, banner: list[str],
                 max_consoles: int) -> None:
        super().__init__(command, host=access.host, port=port, title=title)
        self.access = access
        self.banner = banner
        self.max_consoles = max_consoles
        self.consoles = 0  # websockets being served (each runs a console); one event loop, so no lock

    def initialize_logging(self) -> None:
        handler = RichHandler(show_path=False, show_time=False, rich_tracebacks=True, tracebacks_show_locals=False,
                              highlighter=LogHighlighter(), console=self.console)
        handler.addFilter(Redact())
        logging.basicConfig(level="DEBUG" if self.debug else "INFO", format="%(message)s", handlers=[handler])

    async def _make_app(self) -> web.Application:
        app = await super()._make_app()
        app.middlewares.append(access_middleware(self.access))
        return app

    def full(self) -> str | None:
        if self.consoles < self.max_consoles:
            return None
        return (f"{self.consoles} consoles are open, the most this server allows (--max-consoles "
                f"{self.max_consoles}); close a tab, or restart the server with a higher --max-consoles")

    async def handle_index(self, request: web.Request) -> Any:
        if (reason := self.full()) is not None:
            raise refuse_console(reason)  # the page would only open a websocket that is refused
        # The page's static and websocket URLs are absolute: build them from the address the browser used
        # (an SSH tunnel's local port, a name for 0.0.0.0), not from the listen address.
        self.public_url = f"{request.scheme}://{request.host}"
        return await super().handle_index(request)

    async def handle_websocket(self, request: web.Request) -> web.WebSocketResponse:
        if (reason := self.full()) is not None:
            log.warning("refused a console to %s: %s", request.remote, reason)
            raise refuse_console(reason)
        self.consoles += 1  # before the first await: the next handshake sees this one
        try:
            return await super().handle_websocket(request)
        finally:
            self.consoles -= 1

    async def on_startup(self, app: web.Application) -> None:
        for line in self.banner:
            self.console.print(line, highlight=False, markup=False, soft_wrap=True)  # a URL is never wrapped

    async def on_shutdown(self, app: web.Application) -> None:
        """The server stops (SIGTERM, Ctrl+C): its consoles stop first, while their pipes still work. A
        console whose server went first never exits: its stdin at EOF ends only Textual's input thread, and
        its exit then blocks writing to a pipe nobody reads (seen: twelve consoles left running for an hour,
        ~50 MB each, their journal open). Their runs go on under their supervisors, as after `q`."""
        consoles = psutil.Process().children(recursive=True)
        for proc in consoles:
            try:
                proc.terminate()
            except psutil.Error:
                pass
        loop = asyncio.get_running_loop()
        _gone, alive = await loop.run_in_executor(None, lambda: psutil.wait_procs(consoles, CONSOLES_STOP_S))
        for proc in alive:
            try:
                proc.kill()
            except psutil.Error:
                pass
        if consoles:
            log.info("stopped %d console process(es)%s", len(consoles),
                     f", {len(alive)} with SIGKILL" if alive else "")
