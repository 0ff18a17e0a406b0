"""The `codex-json` channel: `codex exec --json` events (PROVIDERS.md).

`thread.started` carries the thread id, which is also what `codex exec resume` takes, so it is the
lane's session id. Each `turn.completed` reports that turn's `usage` (`cached_input_tokens` is part
of `input_tokens`); turns add up. Codex prints no cost, so the meters estimate one from their price
table and label it as estimated. `codex exec` has no answer channel: it decides up front.
"""

from __future__ import annotations

from collections.abc import Mapping

from lanes_tui.engine.channels.base import Channel, json_line, number
from lanes_tui.engine.state.meters import Usage


def codex_usage(usage: object) -> Usage:
    if not isinstance(usage, Mapping):
        return Usage()
    total = number(usage.get("input_tokens"))
    return Usage(input=total, cached_input=min(total, number(usage.get("cached_input_tokens"))),
                 output=number(usage.get("output_tokens")))


class CodexChannel(Channel):
    name = "codex-json"

    def on_line(self, line: bytes) -> None:
        msg = json_line(line)
        if msg is None:
            return
        kind = msg.get("type")
        if kind == "thread.started":
            self.session(msg.get("thread_id"))
        elif kind == "turn.completed":
            self.ctx.meters.add_turn(codex_usage(msg.get("usage")))
