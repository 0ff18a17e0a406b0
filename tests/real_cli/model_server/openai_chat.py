"""The OpenAI Chat Completions dialect of the scripted model server, as aider (through litellm) speaks it.

    POST /v1/chat/completions   streamed (`data: {chunk}` … `data: [DONE]`) or one JSON body
    GET  /v1/models             a list holding whatever model is asked for

aider has no tool calls: its model answers in text, and aider acts on the text. So a step becomes text:
`WriteFile` an edit block in the edit format aider's system prompt asks for (SEARCH/REPLACE with the
file name on the line before the fence, an empty SEARCH creating the file, for gpt-4o's "diff"; the
whole file for "whole"), `RunCommand` a ```bash block (aider offers to run it; under `--yes-always` it
says no, since shell commands need an explicit yes), `Say` plain text.

One aider run with `--message` is one user turn: the model answers once and aider exits (unless it
reflects, e.g. on a lint error). So one reply carries the script's steps up to and including the next
`Say` (a "turn"). The turn a request gets is, statelessly, the number of assistant messages in the
conversation it carries that are replies of this script (`REPLY_MARK` is in each): aider's few-shot
examples and its "Ok." acknowledgements are assistant messages too, and a resumed chat
(`--restore-chat-history`) carries the earlier replies back.

Auxiliary requests (a commit message, a summary of the chat, both from aider's weak model) are answered
with a line of text and consume no turn; errors come in OpenAI's shape and status.
"""

from __future__ import annotations

import time
from typing import Any

from tests.real_cli.model_server.script import RunCommand, Say, Script, Step, WriteFile
from tests.real_cli.model_server.server import Exchange, RouteTable

#: In every scripted reply (as text the model says), so a later request can count the earlier replies.
REPLY_MARK = "(scripted turn"
#: System-prompt phrases of aider's auxiliary requests (aider/prompts.py): answered, never a turn.
AUXILIARY = ("generates concise, one-line Git commit messages", "summarize this partial conversation",
             "Briefly* summarize")

#: Each failure kind as OpenAI's API sends it: status, error type, error code, message.
ERRORS: dict[str, tuple[int, str, str | None, str]] = {
    "billing": (429, "insufficient_quota", "insufficient_quota",
                "You exceeded your current quota, please check your plan and billing details."),
    "auth": (401, "invalid_request_error", "invalid_api_key",
             "Incorrect API key provided: sk-scri***test. You can find your API key at "
             "https://platform.openai.com/account/api-keys."),
    "forbidden": (403, "invalid_request_error", "unsupported_country_region_territory",
                  "Country, region, or territory not supported"),
    "rate_limit": (429, "requests", "rate_limit_exceeded",
                   "Rate limit reached for gpt-4o on requests per min (RPM): Limit 3, Used 3, Requested 1. "
                   "Please try again in 1s."),
    "usage_limit": (429, "usage_limit_reached", "usage_limit_reached", "The usage limit has been reached"),
    "overloaded": (503, "server_error", "overloaded", "The engine is currently overloaded, please try again later"),
    "server": (500, "server_error", None, "The server had an error while processing your request. Sorry about that!"),
}


def turns(script: Script) -> list[tuple[Step, ...]]:
    """The script's steps cut after each `Say`: what one reply of the model says."""
    groups: list[tuple[Step, ...]] = []
    current: list[Step] = []
    for step in script.steps:
        current.append(step)
        if isinstance(step, Say):
            groups.append(tuple(current))
            current = []
    if current:
        groups.append(tuple(current))
    return groups or [(Say("done"),)]


def edit_format(system: str) -> str:
    """The edit format aider's system prompt asks for: "diff" (SEARCH/REPLACE) or "whole"."""
    return "diff" if "SEARCH/REPLACE" in system else "whole"


def render_step(step: Step, fmt: str) -> str:
    if isinstance(step, WriteFile):
        body = step.content if step.content.endswith("\n") or not step.content else step.content + "\n"
        if fmt == "diff":
            return f"{step.path}\n```\n<<<<<<< SEARCH\n=======\n{body}>>>>>>> REPLACE\n```\n"
        return f"{step.path}\n```\n{body}```\n"
    if isinstance(step, RunCommand):
        return f"```bash\n{step.command}\n```\n"
    return f"{step.text}\n"


def render_turn(steps: tuple[Step, ...], index: int, fmt: str) -> str:
    return "\n".join(render_step(step, fmt) for step in steps) + f"\n{REPLY_MARK} {index + 1})\n"


def text_of(content: Any) -> str:
    """A message's content as text (a string, or a list of `{"type": "text", "text": …}` parts)."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(part.get("text", "") for part in content if isinstance(part, dict))
    return ""


def messages_of(body: Any) -> list[dict[str, Any]]:
    messages = body.get("messages") if isinstance(body, dict) else None
    return [m for m in messages or [] if isinstance(m, dict)]


def is_auxiliary(body: Any) -> bool:
    system = " ".join(text_of(m.get("content")) for m in messages_of(body) if m.get("role") == "system")
    return any(phrase in system for phrase in AUXILIARY)


def turn_index(body: Any) -> int:
    """How many of this script's replies the conversation already holds."""
    return sum(1 for m in messages_of(body)
               if m.get("role") == "assistant" and REPLY_MARK in text_of(m.get("content")))


def reply_for(script: Script, body: Any) -> str:
    if is_auxiliary(body):
        return "Scripted change"
    groups = turns(script)
    index = turn_index(body)
    system = "\n".join(text_of(m.get("content")) for m in messages_of(body) if m.get("role") == "system")
    return render_turn(groups[min(index, len(groups) - 1)], index, edit_format(system))


def _chunk(model: str, delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
    return {"id": "chatcmpl-scripted", "object": "chat.completion.chunk", "created": int(time.time()),
            "model": model, "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}


def _usage(script: Script) -> dict[str, Any]:
    usage = script.usage
    return {"prompt_tokens": usage.input_tokens, "completion_tokens": usage.output_tokens,
            "total_tokens": usage.input_tokens + usage.output_tokens,
            "prompt_tokens_details": {"cached_tokens": usage.cached_input_tokens}}


def fail(exchange: Exchange, kind: str) -> None:
    status, err_type, code, message = ERRORS[kind]
    # The OpenAI SDK under litellm retries 429 and 5xx twice by itself, after `retry-after-ms` when it is
    # given (else 0.5-8 s): a short one keeps the tier fast without changing what aider sees.
    headers: dict[str, str] = {"retry-after-ms": "20"}
    if kind == "rate_limit":
        headers["x-ratelimit-reset-requests"] = "1s"
    elif kind == "usage_limit":
        reset_s = exchange.script.fail.reset_s if exchange.script.fail else 0
        when = time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(int(time.time()) + reset_s))
        message = f"{message}: try again at {when}."
        headers["x-ratelimit-reset-requests"] = f"{reset_s}s"
    exchange.json(status, {"error": {"message": message, "type": err_type, "param": None, "code": code}}, headers)


def chat_completions(exchange: Exchange) -> None:
    body = exchange.body if isinstance(exchange.body, dict) else {}
    model = str(body.get("model") or "gpt-4o")
    auxiliary = is_auxiliary(body)
    if not auxiliary:
        if exchange.script.hang:
            exchange.hang()
            return
        if exchange.main_failure():
            assert exchange.script.fail is not None
            fail(exchange, exchange.script.fail.kind)
            return
    text = reply_for(exchange.script, body)
    if not body.get("stream"):
        exchange.json(200, {"id": "chatcmpl-scripted", "object": "chat.completion", "created": int(time.time()),
                            "model": model, "usage": _usage(exchange.script),
                            "choices": [{"index": 0, "finish_reason": "stop",
                                         "message": {"role": "assistant", "content": text}}]})
        return
    exchange.start_sse()
    exchange.event(_chunk(model, {"role": "assistant", "content": ""}))
    for line in text.splitlines(keepends=True):
        exchange.event(_chunk(model, {"content": line}))
    exchange.event(_chunk(model, {}, "stop"))
    if (body.get("stream_options") or {}).get("include_usage"):
        final = _chunk(model, {})
        final["choices"] = []
        final["usage"] = _usage(exchange.script)
        exchange.event(final)
    exchange.raw(b"data: [DONE]\n\n")


def models(exchange: Exchange) -> None:
    exchange.json(200, {"object": "list", "data": [
        {"id": name, "object": "model", "created": 0, "owned_by": "scripted"}
        for name in ("gpt-4o", "gpt-4o-mini")]})


ROUTES = RouteTable()
ROUTES.add("POST", r"(?:/v1)?/chat/completions", chat_completions)
ROUTES.add("GET", r"(?:/v1)?/models", models)
