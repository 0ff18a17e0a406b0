"""A model server on localhost that the real agent CLIs talk to: one thread per connection, scripted.

Each dialect module registers its routes (`Route`: method, a regex on the path, a handler); the
handler reads the request through an `Exchange` and answers with JSON or server-sent events. Every
request is recorded (`ModelServer.requests`) so a test can say what the CLI sent.

    with ModelServer(Script(steps=(WriteFile("a.txt", "hi\\n"), Say("wrote a.txt")))) as server:
        env["ANTHROPIC_BASE_URL"] = server.url
"""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from tests.real_cli.model_server.script import Script


@dataclass
class Recorded:
    method: str
    path: str
    headers: dict[str, str]
    body: Any


@dataclass(frozen=True)
class Route:
    method: str
    path: re.Pattern[str]
    handler: Callable[[Exchange], None]


class Exchange:
    """One request and the ways to answer it."""

    def __init__(self, server: ModelServer, handler: BaseHTTPRequestHandler, record: Recorded,
                 match: re.Match[str]) -> None:
        self.server, self._handler, self.record, self.match = server, handler, record, match
        self.body: Any = record.body
        self.script: Script = server.script

    def main_failure(self) -> bool:
        """Whether this main request is one the script's `fail` answers (counts it if so)."""
        return self.server.take_failure()

    def json(self, status: int, payload: Any, headers: dict[str, str] | None = None) -> None:
        data = json.dumps(payload).encode()
        self._handler.send_response(status)
        self._handler.send_header("Content-Type", "application/json")
        self._handler.send_header("Content-Length", str(len(data)))
        for name, value in (headers or {}).items():
            self._handler.send_header(name, value)
        self._handler.end_headers()
        self._handler.wfile.write(data)

    def start_sse(self) -> None:
        self._handler.send_response(200)
        self._handler.send_header("Content-Type", "text/event-stream")
        self._handler.send_header("Cache-Control", "no-cache")
        self._handler.send_header("Connection", "close")
        self._handler.end_headers()
        self._handler.close_connection = True

    def event(self, data: Any, name: str | None = None) -> None:
        """One server-sent event (`event:` line when named), flushed."""
        text = (f"event: {name}\n" if name else "") + f"data: {json.dumps(data)}\n\n"
        self._handler.wfile.write(text.encode())
        self._handler.wfile.flush()

    def raw(self, data: bytes) -> None:
        self._handler.wfile.write(data)
        self._handler.wfile.flush()

    def hang(self) -> None:
        """Accept the request and say nothing until the server stops (a model that never answers)."""
        self.server.stopping.wait()


class ModelServer:
    def __init__(self, script: Script | None = None, routes: list[Route] | None = None) -> None:
        from tests.real_cli.model_server import all_routes

        self.script = script or Script()
        self.routes = routes if routes is not None else all_routes()
        self.requests: list[Recorded] = []
        self.stopping = threading.Event()
        self._failures = 0
        self._lock = threading.Lock()
        self._httpd: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        assert self._httpd is not None, "the server is not started"
        return f"http://127.0.0.1:{self._httpd.server_address[1]}"

    def set_script(self, script: Script) -> None:
        with self._lock:
            self.script, self._failures = script, 0

    def take_failure(self) -> bool:
        with self._lock:
            fail = self.script.fail
            if fail is None or (fail.times is not None and self._failures >= fail.times):
                return False
            self._failures += 1
            return True

    def main_requests(self, path_part: str) -> list[Recorded]:
        return [r for r in self.requests if path_part in r.path]

    def __enter__(self) -> ModelServer:
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:
                return None

            def _serve(self, method: str) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length) if length else b""
                try:
                    body: Any = json.loads(raw) if raw else None
                except ValueError:
                    body = raw.decode("utf-8", "replace")
                path = self.path.split("?", 1)[0]
                record = Recorded(method, self.path, {k.lower(): v for k, v in self.headers.items()}, body)
                with server._lock:
                    server.requests.append(record)
                for route in server.routes:
                    match = route.path.fullmatch(path)
                    if route.method == method and match:
                        route.handler(Exchange(server, self, record, match))
                        return
                Exchange(server, self, record, re.match("", "")).json(
                    404, {"error": {"message": f"the scripted server has no route for {method} {path}"}})

            def do_POST(self) -> None:
                self._serve("POST")

            def do_GET(self) -> None:
                self._serve("GET")

        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(target=self._httpd.serve_forever, name="model-server", daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stopping.set()
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
        if self._thread is not None:
            self._thread.join(timeout=10)


@dataclass
class RouteTable:
    """What a dialect module builds: its routes, in the order they are tried."""

    routes: list[Route] = field(default_factory=list)

    def add(self, method: str, path: str, handler: Callable[[Exchange], None]) -> None:
        self.routes.append(Route(method, re.compile(path), handler))
