"""The OpenAI Responses API, as Codex CLI 0.169 speaks it (`wire_api = "responses"`).

What codex sends (recorded from 0.169.0 with a `model_providers` entry whose `base_url` is this server):
one `POST {base_url}/responses` per model turn, JSON, `stream: true`, `store: false`; the conversation
is the `input` list (developer and user `message`s, then the model's own `function_call` /
`custom_tool_call` items, each followed by its `function_call_output` / `custom_tool_call_output`).
It asks for nothing else (no `GET /models` with a custom provider). The tools a classic model
(`gpt-5.5`: `shell_type: shell_command`, `apply_patch_tool_type: freeform`) is offered:
`exec_command` (a function, `{"cmd": …}`) and `apply_patch` (a custom, freeform tool whose input is
the patch text). The gpt-6.x models of 0.169's list are "code mode only": one `exec` tool that takes
JavaScript; this dialect does not speak that, so the tier runs `gpt-5.5` (the preset's default).

The answer is server-sent events: `response.created`, for each output item `response.output_item.added`
(text: `response.output_text.delta`s) and `response.output_item.done`, then `response.completed` with
the usage (`input_tokens_details.cached_tokens`, `output_tokens_details.reasoning_tokens`). Errors are
the HTTP statuses and bodies api.openai.com returns; `usage_limit` is the ChatGPT backend's
`usage_limit_reached` body, the one codex reads a reset time from (`resets_at`, `resets_in_seconds`).
"""

from __future__ import annotations

import itertools
import json
import time
from typing import Any

from tests.real_cli.model_server.script import RunCommand, Say, Step, WriteFile
from tests.real_cli.model_server.server import Exchange, RouteTable

ROUTES = RouteTable()
_ids = itertools.count(1)

#: What a tool result is called in `input`: each one is a step the conversation has passed.
RESULT_TYPES = ("function_call_output", "custom_tool_call_output")


def tool_results(body: Any) -> int:
    """How many tool results the request's conversation holds (the script's step index)."""
    items = body.get("input") if isinstance(body, dict) else None
    if not isinstance(items, list):
        return 0
    return sum(1 for item in items if isinstance(item, dict) and item.get("type") in RESULT_TYPES)


def user_texts(body: Any) -> list[str]:
    """The user messages' texts, in order (a resumed thread carries the earlier prompt)."""
    texts: list[str] = []
    for item in body.get("input", []) if isinstance(body, dict) else []:
        if isinstance(item, dict) and item.get("type") == "message" and item.get("role") == "user":
            for part in item.get("content") or []:
                if isinstance(part, dict) and isinstance(part.get("text"), str):
                    texts.append(part["text"])
    return texts


def patch_adding(path: str, content: str) -> str:
    """An `apply_patch` input that creates `path` holding `content`."""
    lines = content.splitlines() or [""]
    return "*** Begin Patch\n*** Add File: " + path + "\n" + "".join(f"+{line}\n" for line in lines) + "*** End Patch"


# --- errors, as api.openai.com (and, for usage_limit, the ChatGPT backend) sends them -------------

def error_reply(kind: str, reset_s: int) -> tuple[int, dict[str, Any], dict[str, str]]:
    """The status, JSON body and headers of a failure of `kind` (script.FAIL_KINDS)."""
    def body(message: str, type_: str, code: str | None) -> dict[str, Any]:
        return {"error": {"message": message, "type": type_, "param": None, "code": code}}

    if kind == "billing":
        return 429, body("You exceeded your current quota, please check your plan and billing details. For more "
                         "information on this error, read the docs: https://platform.openai.com/docs/guides/"
                         "error-codes/api-errors.", "insufficient_quota", "insufficient_quota"), {}
    if kind == "auth":
        return 401, body("Incorrect API key provided: sk-test. You can find your API key at "
                         "https://platform.openai.com/account/api-keys.", "invalid_request_error",
                         "invalid_api_key"), {}
    if kind == "forbidden":
        return 403, body("You are not allowed to sample from this model", "invalid_request_error", None), {}
    if kind == "rate_limit":
        return 429, body("Rate limit reached for gpt-5.5 in organization org-test on tokens per min (TPM): "
                         "Limit 30000, Used 30000, Requested 1200. Please try again in 1s. Visit "
                         "https://platform.openai.com/account/rate-limits to learn more.", "tokens",
                         "rate_limit_exceeded"), {"retry-after": "1", "x-ratelimit-reset-tokens": "1s"}
    if kind == "usage_limit":
        return 429, {"error": {"type": "usage_limit_reached", "message": "The usage limit has been reached",
                               "plan_type": "plus", "resets_at": int(time.time()) + reset_s,
                               "resets_in_seconds": reset_s}}, {}
    if kind == "overloaded":
        return 503, body("The server is overloaded or not ready yet.", "server_error", None), {}
    if kind == "server":
        return 500, body("The server had an error while processing your request. Sorry about that!",
                         "server_error", None), {}
    raise ValueError(f"no OpenAI error for {kind!r}")


# --- the stream ---------------------------------------------------------------------------------

def _item(step: Step) -> dict[str, Any]:
    n = next(_ids)
    if isinstance(step, Say):
        return {"type": "message", "id": f"msg_{n}", "role": "assistant", "status": "completed",
                "content": [{"type": "output_text", "text": step.text, "annotations": []}]}
    if isinstance(step, WriteFile):
        return {"type": "custom_tool_call", "id": f"ctc_{n}", "call_id": f"call_{n}", "status": "completed",
                "name": "apply_patch", "input": patch_adding(step.path, step.content)}
    if isinstance(step, RunCommand):
        return {"type": "function_call", "id": f"fc_{n}", "call_id": f"call_{n}", "status": "completed",
                "name": "exec_command", "arguments": json.dumps({"cmd": step.command})}
    raise TypeError(f"no Responses item for {step!r}")


def _usage(ex: Exchange) -> dict[str, Any]:
    usage = ex.script.usage
    return {"input_tokens": usage.input_tokens,
            "input_tokens_details": {"cached_tokens": usage.cached_input_tokens,
                                     "cache_write_tokens": usage.cache_write_tokens},
            "output_tokens": usage.output_tokens,
            "output_tokens_details": {"reasoning_tokens": usage.reasoning_tokens},
            "total_tokens": usage.input_tokens + usage.output_tokens}


def _response(ex: Exchange, rid: str, status: str, output: list[dict[str, Any]]) -> dict[str, Any]:
    model = ex.body.get("model") if isinstance(ex.body, dict) else None
    return {"id": rid, "object": "response", "created_at": int(time.time()), "status": status,
            "model": model or "gpt-5.5", "output": output,
            "usage": _usage(ex) if status == "completed" else None}


def stream_step(ex: Exchange, step: Step) -> None:
    """One model turn: the step's single output item, then `response.completed`."""
    rid = f"resp_{next(_ids)}"
    seq = itertools.count()
    ex.start_sse()

    def send(name: str, data: dict[str, Any]) -> None:
        ex.event({"type": name, "sequence_number": next(seq), **data}, name=name)

    send("response.created", {"response": _response(ex, rid, "in_progress", [])})
    item = _item(step)
    if item["type"] == "message":
        send("response.output_item.added", {"output_index": 0, "item": {**item, "status": "in_progress",
                                                                         "content": []}})
        text = item["content"][0]["text"]
        send("response.output_text.delta", {"item_id": item["id"], "output_index": 0, "content_index": 0,
                                            "delta": text})
        send("response.output_text.done", {"item_id": item["id"], "output_index": 0, "content_index": 0,
                                           "text": text})
    else:
        send("response.output_item.added", {"output_index": 0, "item": item})
    send("response.output_item.done", {"output_index": 0, "item": item})
    send("response.completed", {"response": _response(ex, rid, "completed", [item])})


def responses(ex: Exchange) -> None:
    if ex.script.hang:
        ex.hang()
        return
    if ex.main_failure():
        fail = ex.script.fail
        assert fail is not None
        status, payload, headers = error_reply(fail.kind, fail.reset_s)
        ex.json(status, payload, headers)
        return
    stream_step(ex, ex.script.step(tool_results(ex.body)))


ROUTES.add("POST", r"(/v1)?/responses", responses)
