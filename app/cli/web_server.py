"""textual-serve's `Server`, with the checks a dashboard that can accept and abandon needs.

Imported only by `lanes-tui --web` (`web.serve_web`), and only when the `[web]` extra is installed.
Only public names of textual-serve are used: its handlers (`handle_index`, `handle_websocket`), its
hooks (`on_startup`, `on_shutdown`) and its `public_url` attribute.

- **Host and Origin**: a browser lets any web page open a websocket to `127.0.0.1`, and DNS rebinding
  lets a page's own name point there. So a request whose Host is not a loopback name is refused when
  the server is bound to localhost, and a websocket whose Origin (which every browser sends) is not
  the page's own host and port is refused always. A client that sends no Origin is not a browser
  page: it could reach the port anyway.
- **The page's addresses** come from the Host the browser used, not from `--host`: behind
  `ssh -L 9000:127.0.0.1:8000` the browser is at `localhost:9000`, and the page must point its
  websocket there (textual-serve writes `public_url`, fixed at start, into the page).
- **Stopping**: on Ctrl+C or SIGTERM the open websockets' handlers are cancelled at once, so each
  tab's dashboard is told to quit (textual-serve's `AppService.stop`) instead of aiohttp waiting 60 s.
"""

from __future__ import annotations

import asyncio
import ipaddress
import logging
from typing import Any
from urllib.parse import urlsplit

from aiohttp import web
from textual_serve.server import Server

log = logging.getLogger(__name__)


def is_local(host: str) -> bool:
    """True for `localhost` and loopback addresses (127.0.0.0/8, ::1): reachable from this machine only."""
    name = host.strip().strip("[]").lower()
    if name == "localhost":
        return True
    try:
        return ipaddress.ip_address(name).is_loopback
    except ValueError:
        return False


def _host_port(netloc: str) -> tuple[str, int | None]:
    """('name', port or None) of a Host header or an Origin's netloc; ('', None) when it is not one."""
    try:
        parts = urlsplit(f"//{netloc}")
        return (parts.hostname or "").lower(), parts.port
    except ValueError:  # a port that is not a number, an unclosed bracket
        return "", None


class DashboardServer(Server):
    """The dashboard's web server: textual-serve's, with the Host and Origin checks (module docstring)."""

    def __init__(self, command: str, *, host: str, port: int, title: str, local: bool) -> None:
        super().__init__(command, host=host, port=port, title=title)
        self.local = local
        self.sockets: set[asyncio.Task[Any]] = set()

    def refusal(self, request: web.Request, *, websocket: bool) -> str | None:
        """Why this request is refused (one line), or None."""
        name, port = _host_port(request.host)
        if self.local and not is_local(name):
            return f"Host {request.host!r} is not this machine: open the dashboard at http://127.0.0.1:{self.port}/"
        origin = request.headers.get("Origin")
        if not websocket or origin is None:
            return None
        scheme, _, netloc = origin.partition("://")
        origin_name, origin_port = _host_port(netloc)
        if scheme not in ("http", "https") or origin_name != name or (port is not None and origin_port != port):
            return f"a page from {origin!r} may not drive this dashboard"
        return None

    async def handle_index(self, request: web.Request) -> web.StreamResponse:
        if (why := self.refusal(request, websocket=False)) is not None:
            log.warning("refused %s: %s", request.path, why)
            raise web.HTTPForbidden(text=why)
        # No await between this and the page's rendering (textual-serve's handler awaits nothing).
        self.public_url = f"{request.scheme}://{request.host}"
        return await super().handle_index(request)

    async def handle_websocket(self, request: web.Request) -> web.WebSocketResponse:
        if (why := self.refusal(request, websocket=True)) is not None:
            log.warning("refused a websocket: %s", why)
            raise web.HTTPForbidden(text=why)
        task = asyncio.current_task()
        if task is not None:
            self.sockets.add(task)
        try:
            return await super().handle_websocket(request)
        finally:
            if task is not None:
                self.sockets.discard(task)

    async def on_startup(self, app: web.Application) -> None:
        """Nothing: `web.serve_web` has said where it serves and whether it is local (no logo)."""

    async def on_shutdown(self, app: web.Application) -> None:
        """Cancel the open tabs' handlers: each then closes its websocket and tells its dashboard to quit."""
        for task in list(self.sockets):
            task.cancel()


def serve(command: str, *, host: str, port: int, title: str, local: bool) -> None:
    """Serve until Ctrl+C or SIGTERM (textual-serve turns both into a graceful exit)."""
    DashboardServer(command, host=host, port=port, title=title, local=local).serve()
