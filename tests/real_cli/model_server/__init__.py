"""The scripted model server of the real-CLI tier: one HTTP server, four API dialects.

Each dialect module (`anthropic`, `openai_responses`, `openai_chat`, `gemini`) defines `ROUTES`, a
`RouteTable`; a dialect not yet written is simply absent.
"""

from __future__ import annotations

import importlib

from tests.real_cli.model_server.server import Route

DIALECTS = ("anthropic", "openai_responses", "openai_chat", "gemini")


def all_routes() -> list[Route]:
    routes: list[Route] = []
    for name in DIALECTS:
        try:
            module = importlib.import_module(f"tests.real_cli.model_server.{name}")
        except ModuleNotFoundError as exc:
            if exc.name != f"tests.real_cli.model_server.{name}":
                raise
            continue
        routes.extend(module.ROUTES.routes)
    return routes
