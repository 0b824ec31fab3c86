"""textual-serve's Server with our access check in front and page URLs taken from the request.

Part of the interface layer (textual-serve runs Textual consoles): the access rules themselves are the
core's (eagle_console/serve/access.py); `eagle-console serve` imports this module only when it runs, and an
ImportError naming textual_serve or aiohttp is the missing `serve` extra.
"""

from __future__ import annotations

from typing import Any

from aiohttp import web
from textual_serve.server import Server

from eagle_console.serve.access import COOKIE, Access


def access_middleware(access: Access):
    """Refuse what `Access.refusal` refuses; a good `?token=` on the page sets a cookie that the page's
    own requests (static files, the websocket) then carry, and is dropped from the address bar."""

    @web.middleware
    async def check(request: web.Request, handler: Any) -> web.StreamResponse:
        query_token = request.query.get("token")
        bearer = request.headers.get("Authorization", "").removeprefix("Bearer ").strip() or None
        refused = access.refusal(host_header=request.host, origin=request.headers.get("Origin"),
                                 tokens=(query_token, request.cookies.get(COOKIE), bearer))
        if refused is not None:
            status, reason = refused
            error = web.HTTPUnauthorized if status == 401 else web.HTTPForbidden
            raise error(text=f"eagle-console serve: {reason}\n")
        if query_token is not None and access.token is not None and request.path == "/":
            rest = {k: v for k, v in request.query.items() if k != "token"}
            redirect = web.HTTPFound(request.rel_url.with_query(rest))
            redirect.set_cookie(COOKIE, query_token, httponly=True, samesite="Strict", path="/")
            raise redirect
        return await handler(request)

    return check


class ConsoleServer(Server):
    """One console process per browser tab, as textual-serve does; ours adds the access check."""

    def __init__(self, command: str, *, access: Access, port: int, title: str, banner: list[str]) -> None:
        super().__init__(command, host=access.host, port=port, title=title)
        self.access = access
        self.banner = banner

    async def _make_app(self) -> web.Application:
        app = await super()._make_app()
        app.middlewares.append(access_middleware(self.access))
        return app

    async def handle_index(self, request: web.Request) -> Any:
        # The page's static and websocket URLs are absolute: build them from the address the browser used
        # (an SSH tunnel's local port, a name for 0.0.0.0), not from the listen address.
        self.public_url = f"{request.scheme}://{request.host}"
        return await super().handle_index(request)

    async def on_startup(self, app: web.Application) -> None:
        for line in self.banner:
            self.console.print(line, highlight=False, markup=False, soft_wrap=True)  # a URL is never wrapped
