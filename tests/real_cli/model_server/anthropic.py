"""The Anthropic Messages API, as much of it as Claude Code needs, answering from the `Script`.

    POST /v1/messages               streaming (SSE) or not; a main request gets its step, an auxiliary
                                    one (a title, a quota probe, a haiku side call) a short answer
    POST /v1/messages/count_tokens  a rough count
    anything else under /api/…      an empty JSON object (Claude Code's own endpoints, should a future
                                    version call one despite CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC)

A main request is one that offers Claude Code's tools; its step is the number of `tool_result` blocks
already in the conversation (`script.step`), so retries, a resumed session and side calls all land on
the right step. Steps become content blocks: `WriteFile` → `tool_use` `Write` {file_path, content},
`RunCommand` → `tool_use` `Bash` {command, description}, `Say` → text and `end_turn`.

Failures answer the way api.anthropic.com does (status, `{"type": "error", "error": {"type", "message"}}`,
a `request-id` header), with the headers Claude Code reads: `retry-after` on 429 and 529, and for the
plan's usage limit the unified rate-limit headers (`anthropic-ratelimit-unified-status: rejected`,
`-reset` in epoch seconds, `-representative-claim`), from which Claude Code says when the limit resets.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from typing import Any

from tests.real_cli.model_server.script import RunCommand, Say, Step, WriteFile
from tests.real_cli.model_server.server import Exchange, RouteTable

#: Each failure kind as the API sends it: (HTTP status, error.type, message).
ERRORS: dict[str, tuple[int, str, str]] = {
    "billing": (400, "invalid_request_error",
                "Your credit balance is too low to access the Anthropic API. "
                "Please go to Plans & Billing to upgrade or purchase credits."),
    "auth": (401, "authentication_error", "invalid x-api-key"),
    "forbidden": (403, "permission_error", "Your API key does not have permission to use the specified resource."),
    "rate_limit": (429, "rate_limit_error",
                   "This request would exceed the rate limit for your organization of 50 requests per minute."),
    "usage_limit": (429, "rate_limit_error", "Usage limit reached for this plan."),
    "overloaded": (529, "overloaded_error", "Overloaded"),
    "server": (500, "api_error", "Internal server error"),
}
#: Seconds a 429 / 529 tells the client to wait before its retry: short, so the tier stays fast.
RETRY_AFTER_S = 1


def tool_results(body: Any) -> int:
    """How many `tool_result` blocks the conversation already holds: the step it is at."""
    count = 0
    for message in body.get("messages") or () if isinstance(body, dict) else ():
        content = message.get("content") if isinstance(message, dict) else None
        if isinstance(content, list):
            count += sum(1 for block in content if isinstance(block, dict) and block.get("type") == "tool_result")
    return count


def tool_names(body: Any) -> set[str]:
    tools = body.get("tools") if isinstance(body, dict) else None
    return {t.get("name") for t in tools or () if isinstance(t, dict)} if isinstance(tools, list) else set()


def is_main(body: Any) -> bool:
    """A turn of the agent itself: it offers the tools the script's steps call (Write and Bash).

    Claude Code's side calls (a title or topic for the session, a quota probe with max_tokens 1, the
    small model's summaries) offer no tools or other ones, and must not consume a step or a failure.
    """
    return isinstance(body, dict) and {"Write", "Bash"} <= tool_names(body) and body.get("max_tokens", 2) > 1


def blocks(step: Step, index: int) -> tuple[list[dict[str, Any]], str]:
    """The content blocks of `step` and its stop reason."""
    if isinstance(step, Say):
        return [{"type": "text", "text": step.text}], "end_turn"
    if isinstance(step, WriteFile):
        # The path as the script gives it, relative: Claude Code resolves it against its working folder.
        # (An absolute one would have to be read off the conversation, where a resumed session still
        # names the worktree of the attempt it was made in.)
        tool = {"type": "tool_use", "id": f"toolu_script_{index:02d}", "name": "Write",
                "input": {"file_path": step.path, "content": step.content}}
        return [{"type": "text", "text": f"Writing {step.path}."}, tool], "tool_use"
    assert isinstance(step, RunCommand)
    tool = {"type": "tool_use", "id": f"toolu_script_{index:02d}", "name": "Bash",
            "input": {"command": step.command, "description": "Run the scripted command"}}
    return [{"type": "text", "text": f"Running {step.command}."}, tool], "tool_use"


def usage(ex: Exchange, main: bool) -> dict[str, int]:
    if not main:
        return {"input_tokens": 10, "output_tokens": 2, "cache_creation_input_tokens": 0,
                "cache_read_input_tokens": 0}
    u = ex.script.usage
    return {"input_tokens": u.input_tokens - u.cached_input_tokens, "output_tokens": u.output_tokens,
            "cache_creation_input_tokens": 0, "cache_read_input_tokens": u.cached_input_tokens}


def fail(ex: Exchange) -> None:
    kind = ex.script.fail.kind if ex.script.fail else "server"
    status, error_type, message = ERRORS[kind]
    headers = {"request-id": f"req_scripted_{kind}"}
    if status in (429, 529):
        headers["retry-after"] = str(RETRY_AFTER_S)
    if kind == "usage_limit":
        reset = int(time.time()) + (ex.script.fail.reset_s if ex.script.fail else 3600)
        headers.update({"anthropic-ratelimit-unified-status": "rejected",
                        "anthropic-ratelimit-unified-reset": str(reset),
                        "anthropic-ratelimit-unified-representative-claim": "five_hour",
                        "anthropic-ratelimit-unified-5h-status": "rejected",
                        "anthropic-ratelimit-unified-5h-reset": str(reset)})
        headers["retry-after"] = str(max(0, reset - int(time.time())))
    ex.json(status, {"type": "error", "error": {"type": error_type, "message": message},
                     "request_id": headers["request-id"]}, headers)


def messages(ex: Exchange) -> None:
    body = ex.body if isinstance(ex.body, dict) else {}
    main = is_main(body)
    if main and ex.script.hang:
        ex.hang()
        return
    if main and ex.main_failure():
        fail(ex)
        return
    if main:
        index = tool_results(body)
        content, stop = blocks(ex.script.step(index), index)
    else:
        content, stop = [{"type": "text", "text": "Scripted side answer"}], "end_turn"
    message = {"id": f"msg_scripted_{len(ex.server.requests):04d}", "type": "message", "role": "assistant",
               "model": str(body.get("model") or "claude-sonnet-4-5"), "content": content,
               "stop_reason": stop, "stop_sequence": None, "usage": usage(ex, main)}
    if not body.get("stream"):
        ex.json(200, message, {"request-id": f"req_{message['id']}"})
        return
    ex.start_sse()
    for name, data in sse_events(message):
        ex.event(data, name)


def sse_events(message: dict[str, Any]) -> Iterator[tuple[str, dict[str, Any]]]:
    """A finished message as the stream of events that builds it."""
    u = message["usage"]
    start = {**message, "content": [], "stop_reason": None, "usage": {**u, "output_tokens": 1}}
    yield "message_start", {"type": "message_start", "message": start}
    for i, block in enumerate(message["content"]):
        if block["type"] == "text":
            yield "content_block_start", {"type": "content_block_start", "index": i,
                                          "content_block": {"type": "text", "text": ""}}
            yield "content_block_delta", {"type": "content_block_delta", "index": i,
                                          "delta": {"type": "text_delta", "text": block["text"]}}
        else:
            yield "content_block_start", {"type": "content_block_start", "index": i,
                                          "content_block": {**block, "input": {}}}
            raw = json.dumps(block["input"])
            for part in (raw[: len(raw) // 2], raw[len(raw) // 2:]):
                yield "content_block_delta", {"type": "content_block_delta", "index": i,
                                              "delta": {"type": "input_json_delta", "partial_json": part}}
        yield "content_block_stop", {"type": "content_block_stop", "index": i}
    yield "message_delta", {"type": "message_delta",
                            "delta": {"stop_reason": message["stop_reason"], "stop_sequence": None},
                            "usage": {"output_tokens": u["output_tokens"]}}
    yield "message_stop", {"type": "message_stop"}


def count_tokens(ex: Exchange) -> None:
    ex.json(200, {"input_tokens": max(1, len(json.dumps(ex.body)) // 4)})


def other(ex: Exchange) -> None:
    ex.json(200, {})


ROUTES = RouteTable()
ROUTES.add("POST", r"/v1/messages/count_tokens", count_tokens)
ROUTES.add("POST", r"/v1/messages", messages)
ROUTES.add("GET", r"/api/.*", other)
ROUTES.add("POST", r"/api/.*", other)
