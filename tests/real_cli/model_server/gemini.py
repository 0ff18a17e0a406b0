"""Gemini's API (`generativelanguage.googleapis.com/v1beta`), as much of it as Gemini CLI 0.61 uses.

    POST /v1beta/models/{model}:streamGenerateContent?alt=sse   the agent's turns (SSE)
    POST /v1beta/models/{model}:generateContent                 auxiliary calls (next speaker, loop check,
                                                                 session summary): never a step
    POST /v1beta/models/{model}:countTokens                     token counts
    GET  /v1beta/models…                                         model list / model info

A main request is a `streamGenerateContent` whose conversation ends with the user's turn (the prompt
or the results of the tools the model asked for); its step is the number of `functionResponse` parts
in the conversation. Gemini CLI also streams side requests (e.g. a title or summary, with a
`responseSchema` / `responseMimeType` in its config, or no tools at all): those are answered with a short
text and never get a failure or a hang.

Errors are Google's: `{"error": {"code", "message", "status", "details": [...]}}` with `RetryInfo`,
`QuotaFailure` and `ErrorInfo` details where Google sends them.
"""

from __future__ import annotations

import json
import time
from typing import Any

from tests.real_cli.model_server.script import Fail, RunCommand, Say, Step, WriteFile
from tests.real_cli.model_server.server import Exchange, RouteTable

MODEL_VERSION = "gemini-2.5-pro"
#: The tool names and argument names Gemini CLI 0.61 declares (its `functionDeclarations`).
WRITE_TOOL, WRITE_PATH, WRITE_CONTENT = "write_file", "file_path", "content"
SHELL_TOOL, SHELL_COMMAND = "run_shell_command", "command"

_TYPE = "type.googleapis.com/google.rpc."


def _error(code: int, status: str, message: str, details: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    return {"error": {"code": code, "message": message, "status": status, "details": details or []}}


def _error_info(reason: str, **metadata: str) -> dict[str, Any]:
    return {"@type": _TYPE + "ErrorInfo", "reason": reason, "domain": "googleapis.com",
            "metadata": {"service": "generativelanguage.googleapis.com", **metadata}}


def failure(fail: Fail) -> tuple[int, dict[str, Any]]:
    """(HTTP status, body) of one failure kind, worded as Google's API words it."""
    kind = fail.kind
    if kind == "billing":
        return 429, _error(429, "RESOURCE_EXHAUSTED",
                           "You exceeded your current quota, please check your plan and billing details.",
                           [{"@type": _TYPE + "QuotaFailure", "violations": [{
                               "quotaMetric": "generativelanguage.googleapis.com/"
                                              "generate_content_paid_tier_input_token_count",
                               "quotaId": "GenerateContentPaidTierInputTokensPerModelPerDay"}]},
                            _error_info("BILLING_DISABLED"),
                            {"@type": _TYPE + "Help", "links": [{
                                "description": "Enable billing",
                                "url": "https://console.cloud.google.com/billing"}]}])
    if kind == "auth":
        return 400, _error(400, "INVALID_ARGUMENT", "API key not valid. Please pass a valid API key.",
                           [_error_info("API_KEY_INVALID")])
    if kind == "forbidden":
        return 403, _error(403, "PERMISSION_DENIED",
                           "Method doesn't allow unregistered callers (callers without established identity). "
                           "Please use API Key or other form of API consumer identity to call this API.",
                           [_error_info("CONSUMER_INVALID")])
    if kind == "rate_limit":
        return 429, _error(429, "RESOURCE_EXHAUSTED", "Resource has been exhausted (e.g. check quota).",
                           [{"@type": _TYPE + "RetryInfo", "retryDelay": "1s"}])
    if kind == "usage_limit":  # the free tier's daily request quota, as the API words it
        return 429, _error(429, "RESOURCE_EXHAUSTED",
                           "You exceeded your current quota, please check your plan and billing details. "
                           "For more information on this error, head to: "
                           "https://ai.google.dev/gemini-api/docs/rate-limits.\n"
                           "* Quota exceeded for metric: generativelanguage.googleapis.com/"
                           f"generate_content_free_tier_requests, limit: 50, model: {MODEL_VERSION}\n"
                           f"Please retry in {fail.reset_s}.0s.",
                           [{"@type": _TYPE + "QuotaFailure", "violations": [{
                               "quotaMetric": "generativelanguage.googleapis.com/generate_content_free_tier_requests",
                               "quotaId": "GenerateRequestsPerDayPerProjectPerModel-FreeTier",
                               "quotaDimensions": {"location": "global", "model": MODEL_VERSION},
                               "quotaValue": "50"}]},
                            {"@type": _TYPE + "RetryInfo", "retryDelay": f"{fail.reset_s}s"}])
    if kind == "overloaded":
        return 503, _error(503, "UNAVAILABLE", "The model is overloaded. Please try again later.")
    return 500, _error(500, "INTERNAL", "An internal error has occurred. Please retry or report in "
                                        "https://developers.generativeai.google/guide/troubleshooting")


# --- reading a request ---------------------------------------------------------------------------


def contents(body: Any) -> list[dict[str, Any]]:
    raw = body.get("contents") if isinstance(body, dict) else None
    return [c for c in raw if isinstance(c, dict)] if isinstance(raw, list) else []


def tool_results(body: Any) -> int:
    """How many `functionResponse` parts the conversation already holds (the step index)."""
    return sum(1 for c in contents(body) for p in c.get("parts") or [] if isinstance(p, dict)
               and "functionResponse" in p)


def declared_tools(body: Any) -> set[str]:
    names: set[str] = set()
    for tool in (body.get("tools") or []) if isinstance(body, dict) else []:
        for decl in (tool.get("functionDeclarations") or []) if isinstance(tool, dict) else []:
            if isinstance(decl, dict) and isinstance(decl.get("name"), str):
                names.add(decl["name"])
    return names


def wants_json(body: Any) -> bool:
    """The CLI asks for JSON for itself (a next-speaker or loop check, a summary), not for a turn."""
    config = body.get("generationConfig") if isinstance(body, dict) else None
    return isinstance(config, dict) and bool(config.get("responseSchema") or config.get("responseJsonSchema")
                                             or config.get("responseMimeType") == "application/json")


def is_main(body: Any) -> bool:
    """An agent turn: the CLI offers its tools and asks for free text (not JSON for itself)."""
    return not wants_json(body) and bool(declared_tools(body))


def _usage(exchange: Exchange) -> dict[str, int]:
    usage = exchange.script.usage
    return {"promptTokenCount": usage.input_tokens, "candidatesTokenCount": usage.output_tokens,
            "cachedContentTokenCount": usage.cached_input_tokens,
            "totalTokenCount": usage.input_tokens + usage.output_tokens}


def parts_of(step: Step) -> tuple[list[dict[str, Any]], str]:
    """The model's parts for one step, and its finish reason."""
    if isinstance(step, WriteFile):
        return [{"functionCall": {"name": WRITE_TOOL, "args": {WRITE_PATH: step.path,
                                                                WRITE_CONTENT: step.content}}}], "STOP"
    if isinstance(step, RunCommand):
        return [{"functionCall": {"name": SHELL_TOOL, "args": {SHELL_COMMAND: step.command}}}], "STOP"
    assert isinstance(step, Say)
    return [{"text": step.text}], "STOP"


def _chunk(parts: list[dict[str, Any]], finish: str | None, usage: dict[str, int] | None) -> dict[str, Any]:
    candidate: dict[str, Any] = {"content": {"role": "model", "parts": parts}, "index": 0}
    if finish:
        candidate["finishReason"] = finish
    chunk: dict[str, Any] = {"candidates": [candidate], "modelVersion": MODEL_VERSION,
                             "responseId": f"resp-{time.monotonic_ns()}"}
    if usage is not None:
        chunk["usageMetadata"] = usage
    return chunk


# --- handlers ------------------------------------------------------------------------------------


def _fail_or_hang(exchange: Exchange) -> bool:
    """Answer with the script's failure or hang; True if the request is answered so."""
    if exchange.script.hang:
        exchange.hang()
        return True
    fail = exchange.script.fail
    if fail is not None and exchange.main_failure():
        status, body = failure(fail)
        exchange.json(status, body)
        return True
    return False


def stream(exchange: Exchange) -> None:
    body = exchange.body
    if is_main(body):
        if _fail_or_hang(exchange):
            return
        parts, finish = parts_of(exchange.script.step(tool_results(body)))
    else:
        parts, finish = [{"text": "Side answer."}], "STOP"
    exchange.start_sse()
    if parts and "text" in parts[0]:  # text streams in two pieces, as the real API does
        text = parts[0]["text"]
        half = len(text) // 2
        exchange.raw(f"data: {_json(_chunk([{'text': text[:half]}], None, None))}\r\n\r\n".encode())
        parts = [{"text": text[half:]}]
    exchange.raw(f"data: {_json(_chunk(parts, finish, _usage(exchange)))}\r\n\r\n".encode())


def generate(exchange: Exchange) -> None:
    """Non-streaming calls: the CLI's own checks (next speaker, loop detection, summaries), never a step."""
    reply = {"reasoning": "The model finished its turn.", "next_speaker": "user"}
    text = _json(reply) if wants_json(exchange.body) else "ok"
    exchange.json(200, {**_chunk([{"text": text}], "STOP", _usage(exchange))})


def count_tokens(exchange: Exchange) -> None:
    exchange.json(200, {"totalTokens": 42})


def model_info(exchange: Exchange) -> None:
    exchange.json(200, {"name": f"models/{MODEL_VERSION}", "inputTokenLimit": 1048576, "outputTokenLimit": 65536})


def model_list(exchange: Exchange) -> None:
    exchange.json(200, {"models": [{"name": f"models/{MODEL_VERSION}", "inputTokenLimit": 1048576}]})


def _json(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"))


ROUTES = RouteTable()
ROUTES.add("POST", r"/v1beta/models/(?P<model>[^/:]+):streamGenerateContent", stream)
ROUTES.add("POST", r"/v1beta/models/(?P<model>[^/:]+):generateContent", generate)
ROUTES.add("POST", r"/v1beta/models/(?P<model>[^/:]+):countTokens", count_tokens)
ROUTES.add("GET", r"/v1beta/models", model_list)
ROUTES.add("GET", r"/v1beta/models/(?P<model>[^/:]+)", model_info)
