"""The three JSON dialects of `output.log`, each event as readable lines (`channels.readable`).

Claude's stream-json (`claude -p --output-format stream-json --verbose`), codex's `exec --json` and
gemini's stream-json, as PROVIDERS.md gives them and as the pinned CLIs print them. The marks are
the same for all three, so a lane that fell back from one CLI to another reads as one story:

    # claude · model … · session …      a run starts
    the agent's text, as it is
    → Bash: pytest -q                    a tool call: its name and the field that says what it does
      ⎿ 3 passed (+12 lines)             its result, folded to one line
    ? permission: Bash: rm -rf build     a question for the lead
    ! error (billing_error): …           an error, a warning
    … API retry 2/10 in 4 s: 529 …       the CLI retrying by itself
    = done · 3 turns · 41.2 s · $0.0123 · tokens 17 in (+300 cached) · 59 out

Each handler takes the reader (its memory across lines) and one parsed line, and returns its lines;
`render` returns None for a type it does not know (one compact line then). Streamed pieces (Claude's
`stream_event`, codex's `item.updated`, gemini's `delta` messages) never show one by one: the
completed message does.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Mapping
from typing import Any

from lanes_tui.engine.channels.base import number
from lanes_tui.engine.channels.readable_parts import ReaderState, block_text, fold, short, tool_call, unknown

__all__ = ["render"]

#: Claude `system` lines that are bookkeeping, not progress: not shown at all.
_QUIET_SYSTEM = frozenset({
    "hook_started", "hook_progress", "hook_response", "status", "session_state_changed", "thinking_tokens",
    "task_progress", "turn_duration", "turn_starting", "control_request_progress", "session_metadata",
    "commands_changed", "background_tasks_changed", "file_snapshot", "checkpoint_done",
})
#: Claude top-level lines that are protocol or streaming noise.
_QUIET = frozenset({"stream_event", "control_response", "keep_alive", "prompt_suggestion", "command_lifecycle",
                    "active_goal"})
_WARN_LEVELS = frozenset({"warning", "warn", "error"})


def _str(value: Any) -> str:
    return value if isinstance(value, str) else ""


def _map(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def tokens(inp: Any, out: Any, cached: Any = 0, written: Any = 0, reasoning: Any = 0) -> str:
    """`tokens 17 in (+300 cached, +20 written) · 59 out (+8 reasoning)`; "" when nothing was counted."""
    i, o, c, w, r = (number(v) for v in (inp, out, cached, written, reasoning))
    if not (i or o or c or w):
        return ""
    extra = ", ".join(f"+{n} {what}" for n, what in ((c, "cached"), (w, "written")) if n)
    return (f"tokens {i} in" + (f" ({extra})" if extra else "") + f" · {o} out"
            + (f" (+{r} reasoning)" if r else ""))


def _seconds(ms: Any) -> str:
    value = number(ms)
    return f"{value / 1000:.1f} s" if value else ""


def _cost(value: Any) -> str:
    if isinstance(value, bool) or not isinstance(value, int | float) or value != value or value < 0:
        return ""
    return f"${value:.4f}"


def _count(n: int, what: str) -> str:
    return f"{n} {what}{'s' if n != 1 else ''}" if n else ""


def _joined(head: str, *parts: str) -> str:
    return " · ".join([head, *(p for p in parts if p)])


def _questions(tool_input: Any) -> str:
    """AskUserQuestion's questions and their options, on one line."""
    asked = []
    for q in _map(tool_input).get("questions") or []:
        if not isinstance(q, Mapping):
            continue
        options = [short(o.get("label"), 30) for o in q.get("options") or [] if isinstance(o, Mapping)]
        asked.append(short(q.get("question"), 100) + (f" [{' / '.join(options)}]" if options else ""))
    return " ".join(asked)


# --- claude -----------------------------------------------------------------------------------------

def _claude_system(r: ReaderState, msg: Mapping[str, Any]) -> list[str]:
    sub = _str(msg.get("subtype"))
    if sub == "init":
        model, session = msg.get("model"), msg.get("session_id")
        return [_joined("# claude", f"model {short(model, 60)}" if isinstance(model, str) else "",
                        f"session {short(session, 40)}" if isinstance(session, str) else "")]
    if sub == "api_retry":
        attempt, most = number(msg.get("attempt")), number(msg.get("max_retries"))
        delay = _seconds(msg.get("retry_delay_ms"))
        why = " ".join(short(v, 60) for v in (msg.get("error_status"), msg.get("error")) if v not in (None, ""))
        return [f"… API retry {attempt}/{most}" + (f" in {delay}" if delay else "") + (f": {why}" if why else "")]
    if sub in _QUIET_SYSTEM:
        return []
    if sub == "permission_denied":
        return [f"! permission denied: {short(msg.get('tool_name'), 40)}: {short(msg.get('message'), 160)}"]
    said = next((msg[k] for k in ("content", "text", "message", "error") if msg.get(k) not in (None, "")), None)
    if said is None:
        return [unknown(msg, f"system {sub}")]
    mark = "!" if msg.get("level") in _WARN_LEVELS or sub == "api_error" else "#"
    return [f"{mark} {short(sub, 40)}: {short(said, 200)}"]


def _claude_assistant(r: ReaderState, msg: Mapping[str, Any]) -> list[str]:
    message = msg.get("message")
    if not isinstance(message, Mapping):
        return [unknown(msg)]
    indent = "  " if msg.get("parent_tool_use_id") else ""  # a subagent's (Task) messages
    content = message.get("content")
    msg_id = _str(message.get("id")) or _str(msg.get("uuid"))
    error = msg.get("error")
    if isinstance(error, str) and error:  # the API refused: the text is its message (billing, auth, …)
        said = block_text(content)
        if not r.first_time(f"{msg_id}:error:{error}:{hash(said)}"):
            return []
        r.first_time(f"said:{hash(said)}")  # the result repeats it: said once
        return [f"{indent}! error ({short(error, 40)}): {short(said, 200) or 'no message'}"]
    blocks = [{"type": "text", "text": content}] if isinstance(content, str) else content
    out: list[str] = []
    for block in blocks if isinstance(blocks, list) else []:
        if not isinstance(block, Mapping):
            continue
        kind = block.get("type")
        if kind == "text" and isinstance(block.get("text"), str) and block["text"].strip():
            if r.first_time(f"{msg_id}:text:{hash(block['text'])}"):
                out.extend(r.text(block["text"], indent))
        elif kind in ("tool_use", "server_tool_use"):
            name, call_id = block.get("name"), block.get("id")
            key = call_id if isinstance(call_id, str) else f"{msg_id}:{name}:{hash(repr(block.get('input')))}"
            if r.first_time(f"tool:{key}"):
                r.name_tool(call_id, _str(name))
                asked = _questions(block.get("input")) if name == "AskUserQuestion" else ""
                out.append(indent + (f"→ AskUserQuestion: {asked}" if asked else tool_call(name, block.get("input"))))
        elif (kind == "thinking" and isinstance(block.get("thinking"), str) and block["thinking"].strip()
              and r.first_time(f"{msg_id}:thinking:{hash(block['thinking'])}")):
            out.append(f"{indent}  (thinking) {short(block['thinking'])}")
    return out


def _claude_user(r: ReaderState, msg: Mapping[str, Any]) -> list[str]:
    message = _map(msg.get("message"))
    indent = "  " if msg.get("parent_tool_use_id") else ""
    content = message.get("content")
    if isinstance(content, str):
        return r.text(content, "> ") if content.strip() else []
    out: list[str] = []
    for block in content if isinstance(content, list) else []:
        if not isinstance(block, Mapping):
            continue
        if block.get("type") == "tool_result":
            call_id = block.get("tool_use_id")
            if isinstance(call_id, str) and not r.first_time(f"result:{call_id}"):
                continue
            failed = "error: " if block.get("is_error") is True else ""
            out.append(f"{indent}  ⎿ {failed}{fold(block.get('content'))}")
        elif block.get("type") == "text" and isinstance(block.get("text"), str) and block["text"].strip():
            out.extend(r.text(block["text"], "> "))
    return out


def _claude_result(r: ReaderState, msg: Mapping[str, Any]) -> list[str]:
    sub = _str(msg.get("subtype"))
    usage = _map(msg.get("usage"))
    turns = number(msg.get("num_turns"))
    stats = (_count(turns, "turn"), _seconds(msg.get("duration_ms")), _cost(msg.get("total_cost_usd")),
             tokens(usage.get("input_tokens"), usage.get("output_tokens"), usage.get("cache_read_input_tokens"),
                    usage.get("cache_creation_input_tokens")))
    if msg.get("is_error") is True or sub.startswith("error"):
        status = msg.get("api_error_status")
        said = msg.get("result") if msg.get("result") not in (None, "") else msg.get("errors")
        if isinstance(said, str) and f"said:{hash(said)}" in r.seen:
            said = None  # the assistant's error line said it just before
        kind = sub if sub.startswith("error") else "failed"
        head = f"! {short(kind, 40)}" + (f" (API {short(status, 10)})" if status not in (None, "") else "")
        return [head + (f": {short(said, 200)}" if said not in (None, "", []) else ""), _joined("= ended", *stats)]
    return [_joined("= done", *stats)]


def _claude_control(r: ReaderState, msg: Mapping[str, Any]) -> list[str]:
    request = _map(msg.get("request"))
    sub = _str(request.get("subtype"))
    if sub != "can_use_tool":
        return [] if sub in ("initialize", "interrupt", "set_permission_mode") else [unknown(request, f"request {sub}")]
    tool, tool_input = request.get("tool_name"), request.get("input")
    if tool == "AskUserQuestion":
        return [f"? asks: {_questions(tool_input) or short(tool_input)}"]
    return ["? permission: " + tool_call(tool, tool_input).removeprefix("→ ")]


def _rate_limit(r: ReaderState, msg: Mapping[str, Any]) -> list[str]:
    """Claude's view of the account's limits: shown only when it is not `allowed`."""
    info = _map(msg.get("rate_limit_info"))
    status = _str(info.get("status"))
    if status in ("", "allowed"):
        return []
    which = f" ({short(info.get('rateLimitType'), 30)})" if info.get("rateLimitType") else ""
    resets = number(info.get("resetsAt"))
    when = ""
    if resets:
        when = ", resets " + time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime(min(resets, 2**37)))
    return [f"! rate limit {short(status, 30)}{which}{when}"]


# --- codex ------------------------------------------------------------------------------------------

_SHELL = re.compile(r"^(?:/\S*/)?(?:ba|z)?sh -l?c (?P<q>['\"]?)(?P<cmd>.*)(?P=q)$", re.DOTALL)


def _command(value: Any) -> str:
    """A codex command as the lead would type it: `bash -lc 'ls -la'` is `ls -la`."""
    text = " ".join(str(v) for v in value) if isinstance(value, list) else _str(value)
    found = _SHELL.match(text.strip())
    return found.group("cmd") if found else text


def _codex_item(r: ReaderState, msg: Mapping[str, Any]) -> list[str]:
    item = _map(msg.get("item"))
    phase = _str(msg.get("type")).removeprefix("item.")
    kind, item_id = _str(item.get("type")), item.get("id")
    if phase == "updated":
        return []  # streamed progress: the completed item shows
    started = phase == "started"
    call = f"codex:{item_id}" if isinstance(item_id, str) else ""
    if kind == "command_execution":
        head = f"→ $ {short(_command(item.get('command')))}"
        if started:
            r.first_time(call)
            return [head]
        out = [head] if not call or r.first_time(call) else []  # its start scrolled out of the tail
        code = item.get("exit_code")
        status = _str(item.get("status"))
        label = f"exit {code}" if isinstance(code, int) and not isinstance(code, bool) else status or "done"
        return [*out, f"  ⎿ {label}: {fold(item.get('aggregated_output'))}"]
    if started and kind not in ("todo_list", "mcp_tool_call"):
        return []  # shown when completed
    if kind == "agent_message":
        return r.text(_str(item.get("text")))
    if kind == "reasoning":
        text = _str(item.get("text")).replace("**", "")
        return [f"  (thinking) {short(text)}"] if text.strip() else []
    if kind == "file_change":
        changes = [f"{short(c.get('kind'), 10)} {short(c.get('path'), 80)}" for c in item.get("changes") or []
                   if isinstance(c, Mapping)]
        failed = "! failed " if item.get("status") == "failed" else "→ "
        return [f"{failed}edit: {short(', '.join(changes), 160) or 'no files'}"]
    if kind == "todo_list":
        todo = [t for t in item.get("items") or [] if isinstance(t, Mapping)]
        done = sum(1 for t in todo if t.get("completed") is True)
        if started:
            return [f"→ todo: {len(todo)} items" + (f": {short(todo[0].get('text'), 80)} …" if todo else "")]
        return [f"  ⎿ todo: {done}/{len(todo)} done"]
    if kind == "mcp_tool_call":
        name = f"{short(item.get('server'), 30)}.{short(item.get('tool'), 40)}"
        if started:
            r.first_time(call)
            return [tool_call(f"mcp {name}", item.get("arguments"))]
        out = [tool_call(f"mcp {name}", item.get("arguments"))] if not call or r.first_time(call) else []
        error = _map(item.get("error")).get("message") or item.get("error")
        result = _map(item.get("result")).get("content", item.get("result"))
        return [*out, f"  ⎿ error: {short(error)}" if error else f"  ⎿ {fold(result)}"]
    if kind == "web_search":
        return [f"→ web search: {short(item.get('query'))}"]
    if kind == "error":
        return [f"! warning: {short(item.get('message'), 200)}"]
    return [unknown(item, f"codex {short(kind, 30) or 'item'}")]


def _codex_turn(r: ReaderState, msg: Mapping[str, Any]) -> list[str]:
    kind = _str(msg.get("type"))
    if kind == "turn.started":
        return []
    if kind == "turn.failed":
        error = msg.get("error")
        said = _map(error).get("message") or error
        if isinstance(said, str) and f"said:{hash(said)}" in r.seen:
            return ["! turn failed"]  # codex printed the same words as an `error` just before
        return [f"! turn failed: {short(said, 200)}"]
    if kind == "turn.completed":
        usage = _map(msg.get("usage"))
        return [_joined("= turn done", tokens(usage.get("input_tokens"), usage.get("output_tokens"),
                                              usage.get("cached_input_tokens"), usage.get("cache_write_input_tokens"),
                                              usage.get("reasoning_output_tokens")))]
    return [unknown(msg)]


def _thread(r: ReaderState, msg: Mapping[str, Any]) -> list[str]:
    thread = msg.get("thread_id")
    return [_joined("# codex", f"thread {short(thread, 40)}" if isinstance(thread, str) else "")]


def _error(r: ReaderState, msg: Mapping[str, Any]) -> list[str]:
    """codex's `error` and gemini's (gemini adds a severity: a warning is not a failure). codex says
    `Reconnecting... 1/5 (…)` as an error while it retries by itself: that is a retry line."""
    said = msg.get("message") if msg.get("message") not in (None, "") else msg.get("error")
    if isinstance(said, str) and said.startswith("Reconnecting"):
        return [f"… {short(said, 200)}"]
    mark = "warning" if msg.get("severity") in ("warning", "warn", "info") else "error"
    if isinstance(said, str):
        r.first_time(f"said:{hash(said)}")
    return [f"! {mark}: {short(said, 200)}"]


# --- gemini -----------------------------------------------------------------------------------------

def _gemini_init(r: ReaderState, msg: Mapping[str, Any]) -> list[str]:
    model, session = msg.get("model"), msg.get("session_id")
    return [_joined("# gemini", f"model {short(model, 60)}" if isinstance(model, str) else "",
                    f"session {short(session, 40)}" if isinstance(session, str) else "")]


def _gemini_message(r: ReaderState, msg: Mapping[str, Any]) -> list[str]:
    content = block_text(msg.get("content"))
    if msg.get("role") == "user":  # the task as the CLI got it (lanes-tui's preamble first): one line
        return [f"> {fold(content, 160)}"] if content.strip() else []
    return r.text(content)


def _gemini_tool_use(r: ReaderState, msg: Mapping[str, Any]) -> list[str]:
    r.name_tool(msg.get("tool_id"), _str(msg.get("tool_name")))
    return [tool_call(msg.get("tool_name"), msg.get("parameters"))]


def _gemini_tool_result(r: ReaderState, msg: Mapping[str, Any]) -> list[str]:
    if msg.get("status") == "error" or msg.get("error"):
        error = msg.get("error")
        return [f"  ⎿ error: {short(_map(error).get('message') or error or msg.get('output'), 200)}"]
    output = msg.get("output")
    return [f"  ⎿ {fold(output)}" if output not in (None, "") else "  ⎿ ok"]


def _gemini_result(r: ReaderState, msg: Mapping[str, Any]) -> list[str]:
    stats = _map(msg.get("stats"))
    calls = number(stats.get("tool_calls"))
    parts = (_count(calls, "tool call"), _seconds(stats.get("duration_ms")),
             tokens(stats.get("input_tokens"), stats.get("output_tokens"), stats.get("cached")))
    if msg.get("status") == "error" or msg.get("error"):
        error = _map(msg.get("error"))
        kind = short(error.get("type"), 40) if error.get("type") not in (None, "", "unknown") else "error"
        return [f"! {kind}: {short(error.get('message') or msg.get('error'), 200)}", _joined("= ended", *parts)]
    return [_joined("= done", *parts)]


def _result(r: ReaderState, msg: Mapping[str, Any]) -> list[str]:
    """`result` is claude's and gemini's: gemini's has `stats` (or a `status` and no `subtype`)."""
    if "stats" in msg or ("status" in msg and "subtype" not in msg):
        return _gemini_result(r, msg)
    return _claude_result(r, msg)


Handler = Callable[[ReaderState, Mapping[str, Any]], list[str]]
HANDLERS: dict[str, Handler] = {
    "system": _claude_system, "assistant": _claude_assistant, "user": _claude_user, "result": _result,
    "control_request": _claude_control, "rate_limit_event": _rate_limit,
    "control_cancel_request": lambda r, m: ["? (the question was withdrawn)"],
    "thread.started": _thread, "turn.started": _codex_turn, "turn.completed": _codex_turn,
    "turn.failed": _codex_turn, "item.started": _codex_item, "item.updated": _codex_item,
    "item.completed": _codex_item, "error": _error,
    "init": _gemini_init, "message": _gemini_message, "tool_use": _gemini_tool_use,
    "tool_result": _gemini_tool_result,
}


def render(r: ReaderState, msg: Mapping[str, Any]) -> list[str] | None:
    """The readable lines of one parsed output line; None for a type no dialect has."""
    kind = msg.get("type")
    if not isinstance(kind, str):
        return None
    if kind in _QUIET:
        return []
    if kind == "message" and msg.get("delta") is True and msg.get("role") != "user":
        content = block_text(msg.get("content"))
        r.pending.append(content)  # gemini streams its answer: shown whole, at the next event
        return []
    handler = HANDLERS.get(kind)
    if handler is None:
        return None
    out = handler(r, msg)  # first: a handler that fails on an odd line loses no held text
    return [*r.flush(), *out]
