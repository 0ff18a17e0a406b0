"""The `gemini-stream-json` channel: `gemini -p … --output-format stream-json` events (PROVIDERS.md).

`init` carries the session id (what `gemini -r` resumes) and the model; `result.stats` the run's
token totals, with `cached` as the part of `input_tokens` served from the cache. Gemini prints no
cost, so the meters estimate one and label it as estimated. `gemini -p` has no answer channel.
"""

from __future__ import annotations

from collections.abc import Mapping

from lanes_tui.engine.channels.base import Channel, json_line, number
from lanes_tui.engine.state.meters import Usage


def gemini_usage(stats: object) -> Usage:
    if not isinstance(stats, Mapping):
        return Usage()
    total = number(stats.get("input_tokens", stats.get("input")))
    cached = number(stats.get("cached", stats.get("cached_input_tokens")))
    return Usage(input=total, cached_input=min(total, cached),
                 output=number(stats.get("output_tokens", stats.get("output"))))


class GeminiChannel(Channel):
    name = "gemini-stream-json"

    def on_line(self, line: bytes) -> None:
        msg = json_line(line)
        if msg is None:
            return
        kind = msg.get("type")
        if kind == "init":
            self.session(msg.get("session_id"))
            if isinstance(msg.get("model"), str):
                self.ctx.meters.set_model(msg["model"])
        elif kind == "result" and isinstance(msg.get("stats"), Mapping):
            self.ctx.meters.set_total(gemini_usage(msg["stats"]))
