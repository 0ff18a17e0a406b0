"""Claude's stream-json as bytes and numbers: the prompt as its one `user` line, a `control_response`
line, a usage object in the meters' semantics, and the model's context window from the `result` line.
Split from `channels.claude` (the protocol's state: pending requests, questions, answers) so the wire
format is read and tested on its own.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from lanes_tui.engine.channels.base import number
from lanes_tui.engine.state.meters import Usage

__all__ = ["claude_context_window", "claude_usage", "control_response", "user_message"]


def claude_usage(usage: Any) -> Usage:
    """Claude's usage object in the meters' semantics (`input` includes cache reads and writes)."""
    if not isinstance(usage, Mapping):
        return Usage()
    fresh = number(usage.get("input_tokens"))
    read = number(usage.get("cache_read_input_tokens"))
    write = number(usage.get("cache_creation_input_tokens"))
    return Usage(input=fresh + read + write, cached_input=read, cache_write=write,
                 output=number(usage.get("output_tokens")))


def claude_context_window(result: Mapping[str, Any], model: str) -> int:
    """The window Claude reports for `model` in the `result` line (`modelUsage.<model>.contextWindow`),
    or 0. `modelUsage` may name several models (a small one for side tasks): the run's own model is
    looked up by name; with no match, only a lone entry is trusted."""
    usage = result.get("modelUsage")
    if not isinstance(usage, Mapping):
        return 0
    entry = usage.get(model)
    if not isinstance(entry, Mapping):
        entries = [value for value in usage.values() if isinstance(value, Mapping)]
        entry = entries[0] if len(entries) == 1 else {}
    return number(entry.get("contextWindow"))


def control_response(request_id: str, response: Mapping[str, Any] | None = None, *,
                     error: str | None = None) -> bytes:
    """One stdin line answering a control request: success with `response`, or an error."""
    body: dict[str, Any] = {"subtype": "error" if error is not None else "success", "request_id": request_id}
    if error is not None:
        body["error"] = error
    else:
        body["response"] = dict(response or {})
    return (json.dumps({"type": "control_response", "response": body}, separators=(",", ":"),
                       ensure_ascii=False) + "\n").encode("utf-8")


def user_message(prompt: str) -> bytes:
    """The prompt as the one stream-json `user` message line the CLI reads first."""
    message = {"type": "user", "message": {"role": "user", "content": [{"type": "text", "text": prompt}]}}
    return (json.dumps(message, separators=(",", ":"), ensure_ascii=False) + "\n").encode("utf-8")
