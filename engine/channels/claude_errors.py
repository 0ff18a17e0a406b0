"""What Claude Code's stream-json says went wrong with the API, read from its structured fields.

Claude Code 2.1.328 (recorded in tests/real_cli/samples/claude/) reports an API error three ways:

* an `assistant` line whose message it made itself (`"model": "<synthetic>"`), with top-level
  `error` (its own enum: `billing_error`, `authentication_failed`, `rate_limit`, `overloaded`,
  `server_error`, `model_not_found`, …), `is_api_error_message`, `api_error_status` (the HTTP status),
  `api_error_type` (the body's `error.type`), and for a plan's usage limit `api_error:
  "usage_limit_reached"` with `api_error_params.rate_limit_info.resetsAt` (epoch seconds);
* the `result` line: `is_error`, `api_error_status`, `api_error_type`, `api_error` (no `error` enum);
* before each of its own retries a `system` / `api_retry` line (`retry_delay_ms`, `error_status`,
  `error`), and for subscribers and gateways a `rate_limit_event` line (`rate_limit_info`: `status`,
  `resetsAt`, `rateLimitType`).

Its `error` enum is coarser than the HTTP status in places: a 403 is `authentication_failed` and a 529
whose retries ran out is `server_error`, so the status and the body's type refine it. The message text
is never parsed here: the provider's text patterns (`config.provider_facts`) remain the fallback.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from lanes_tui.engine.core.atomic import append_jsonl

#: Claude Code's `error` field → `channels.base.ERROR_KINDS`; the enum's other values
#: (`invalid_request`, `max_output_tokens`, `unknown`) are not the provider refusing the lane.
ERROR_FIELD = {
    "billing_error": "billing",
    "authentication_failed": "auth",
    "oauth_org_not_allowed": "auth",
    "verification_required": "auth",
    "cloud_credential_error": "auth",
    "account_on_hold": "forbidden",
    "rate_limit": "rate_limit",
    "overloaded": "overloaded",
    "server_error": "server",
    "model_not_found": "model",
}
#: The API body's `error.type` → kind, where the `error` enum is missing (the result line).
ERROR_TYPE = {
    "billing_error": "billing",
    "authentication_error": "auth",
    "permission_error": "forbidden",
    "not_found_error": "model",
    "rate_limit_error": "rate_limit",
    "overloaded_error": "overloaded",
    "api_error": "server",
}
#: `api_error` values that mean the plan's quota is used up until a reset time.
USAGE_LIMIT_API_ERRORS = ("usage_limit_reached",)


@dataclass(frozen=True)
class ClaudeError:
    kind: str
    detail: str
    reset_at: float | None = None


def _status(msg: Mapping[str, Any]) -> int | None:
    status = msg.get("api_error_status")
    return status if isinstance(status, int) and not isinstance(status, bool) else None


def _by_status(status: int | None) -> str | None:
    if status is None:
        return None
    if status == 529:
        return "overloaded"
    if status >= 500:
        return "server"
    return {401: "auth", 402: "billing", 403: "forbidden", 404: "model", 429: "rate_limit"}.get(status)


def reset_time(info: Any) -> float | None:
    """`rate_limit_info.resetsAt` (epoch seconds), if it is a plausible number."""
    if not isinstance(info, Mapping):
        return None
    value = info.get("resetsAt")
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0 < value < 1e11:
        return None
    return float(value)


def _kind(msg: Mapping[str, Any], field_value: Any) -> str | None:
    """The kind from Claude's `error` enum, refined by the HTTP status and the body's type."""
    status, body_type = _status(msg), msg.get("api_error_type")
    kind = ERROR_FIELD.get(field_value) if isinstance(field_value, str) else None
    if kind is None and isinstance(body_type, str):
        kind = ERROR_TYPE.get(body_type)
    if kind is None:
        kind = _by_status(status)
    if kind == "auth" and (status == 403 or body_type == "permission_error"):
        kind = "forbidden"
    if kind == "server" and (status == 529 or body_type == "overloaded_error"):
        kind = "overloaded"
    if kind == "rate_limit" and msg.get("api_error") in USAGE_LIMIT_API_ERRORS:
        kind = "usage_limit"
    return kind


def _text(message: Any) -> str:
    content = message.get("content") if isinstance(message, Mapping) else None
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return " ".join(b["text"] for b in content if isinstance(b, Mapping) and isinstance(b.get("text"), str))
    return ""


def assistant_error(msg: Mapping[str, Any], last_reset: float | None = None) -> ClaudeError | None:
    """The API error an `assistant` line stands for, or None for the model's own messages."""
    field_value = msg.get("error")
    if not msg.get("is_api_error_message") and not isinstance(field_value, str):
        return None
    kind = _kind(msg, field_value)
    if kind is None:
        return None
    detail = _text(msg.get("message")) or str(field_value)
    params = msg.get("api_error_params")
    reset = reset_time(params.get("rate_limit_info")) if isinstance(params, Mapping) else None
    if kind == "rate_limit" and reset is not None and isinstance(params, Mapping) \
            and isinstance(params.get("rate_limit_info"), Mapping) \
            and params["rate_limit_info"].get("status") == "rejected":
        kind = "usage_limit"
    if kind == "usage_limit":
        return ClaudeError(kind, detail, reset if reset is not None else last_reset)
    return ClaudeError(kind, detail)


def result_error(msg: Mapping[str, Any], last_reset: float | None = None) -> ClaudeError | None:
    """The API error a `result` line with `is_error` reports (when no assistant line said it)."""
    if msg.get("is_error") is not True or (_status(msg) is None and not msg.get("api_error_type")):
        return None
    kind = _kind(msg, None)
    if kind is None:
        return None
    detail = msg.get("result") if isinstance(msg.get("result"), str) else f"API error {_status(msg)}"
    return ClaudeError(kind, str(detail), last_reset if kind == "usage_limit" else None)


def retry_delay(msg: Mapping[str, Any]) -> tuple[float, str] | None:
    """A `system` / `api_retry` line: (seconds until Claude retries by itself, what it retries after)."""
    delay = msg.get("retry_delay_ms")
    if isinstance(delay, bool) or not isinstance(delay, int | float) or not 0 <= delay < 86_400_000:
        return None
    said = " ".join(str(msg[k]) for k in ("error_status", "error") if msg.get(k) is not None)
    attempt, most = msg.get("attempt"), msg.get("max_retries")
    if isinstance(attempt, int) and isinstance(most, int):
        said += f" (attempt {attempt} of {most})"
    return delay / 1000, said.strip()


def rejected_reset(msg: Mapping[str, Any]) -> float | None:
    """A `rate_limit_event` line that says the plan's limit is reached: when it resets."""
    info = msg.get("rate_limit_info")
    if not isinstance(info, Mapping) or info.get("status") != "rejected":
        return None
    return reset_time(info)


def record(lane_dir: Path | None, at: float, event: str, **fields: Any) -> None:
    """An `api-error` or `api-retry` event in the lane's events: what Claude said, for the lead (and the
    tier's tests) whatever result the engine makes of it."""
    if lane_dir is None:
        return
    try:
        append_jsonl(lane_dir / "events.jsonl", {"t": at, "type": event, **fields})
    except OSError:
        return
