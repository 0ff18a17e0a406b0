"""The `claude-stream-json` channel: Claude's stream-json control protocol (INBOX.md, `claude-stdio`).

The prompt goes in as one stream-json `user` message and stdin stays open, because that open pipe is
how permission answers get back: the CLI (run with `--permission-prompt-tool stdio`) prints a
`control_request` / `can_use_tool` line and waits for our `control_response` line. Each request
becomes an inbox question correlated by its `request_id`; only a request that is still pending is
ever answered (a `control_cancel_request` withdraws it), so a stale answer can never reach the agent.
When the `result` line arrives the run is over: stdin is closed so the CLI exits.

Meters: `assistant` lines carry the usage of their message so far, and a message is printed several
times as it grows, so usage is kept per `message.id` and replaced, never summed per line; the
`result` line's totals and `total_cost_usd` replace the live figures at the end. The same usage's
prompt (input + cache reads + cache writes) of the latest main-thread message is how full the context
is (`state.context`; a sub-agent's messages, with a `parent_tool_use_id`, have a context of their
own), and the `result` line's `modelUsage` names the window.

API errors are read from Claude's structured fields (`claude_errors`: the `error` of an API-error
`assistant` line, the `result` line's `api_error_status`, `api_retry` lines) and reported through
`report_error` / `report_retry`; the preset's text patterns stay the fallback.
"""

from __future__ import annotations

import dataclasses
import json
import logging
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from lanes_tui.engine.channels.base import (
    MAX_BODY_CHARS,
    POLL_S,
    Channel,
    cancel_question,
    json_line,
    orphan_question,
    truncate,
)
from lanes_tui.engine.channels.claude_errors import (
    ClaudeError,
    assistant_error,
    record,
    rejected_reset,
    result_error,
    retry_delay,
)
from lanes_tui.engine.channels.claude_wire import (
    claude_context_window,
    claude_usage,
    control_response,
    user_message,
)
from lanes_tui.engine.config.cli_facts import CLAUDE_PERMISSION_ARGS
from lanes_tui.engine.core.errors import LanesError
from lanes_tui.engine.inbox.store import Question, QuestionView
from lanes_tui.engine.state.allow import RuleBook, record_auto_allow

log = logging.getLogger(__name__)

DENY_MESSAGE = "The lead denied this."
WITHDRAWN_MESSAGE = "The question was withdrawn before the lead answered."
MAX_TITLE_CHARS = 200
#: Claude asks at most four questions in one AskUserQuestion call; more than this is not trusted.
MAX_ASK_QUESTIONS = 8
#: The input field of the tool whose value says best what a permission is for.
TOOL_SUBJECT = {"Bash": "command", "Edit": "file_path", "MultiEdit": "file_path", "Write": "file_path",
                "Read": "file_path", "NotebookEdit": "notebook_path", "WebFetch": "url", "WebSearch": "query",
                "Glob": "pattern", "Grep": "pattern"}


def permission_title(tool: str, tool_input: Mapping[str, Any]) -> str:
    """`Allow Bash: rm -rf build`: the tool and the one input field that says what it will do."""
    subject = tool_input.get(TOOL_SUBJECT.get(tool, ""))
    if not isinstance(subject, str):
        subject = next((v for v in tool_input.values() if isinstance(v, str) and v.strip()), "")
    subject = " ".join(str(subject).split())
    return truncate(f"Allow {tool}: {subject}" if subject else f"Allow {tool}?", MAX_TITLE_CHARS)


def permission_subject(tool: str, tool_input: Mapping[str, Any]) -> str | None:
    """The input field an allow rule's pattern is matched against (`state.allow`), as the agent sent
    it: a Bash command, a file path, a URL; None for a tool without one."""
    subject = tool_input.get(TOOL_SUBJECT.get(tool, ""))
    return subject if isinstance(subject, str) else None


@dataclass
class _Pending:
    """A control request the CLI is still waiting on, and the inbox questions that stand for it."""

    request_id: str
    tool: str
    tool_input: dict[str, Any]
    questions: list[Question] = field(default_factory=list)
    #: AskUserQuestion only: the question text Claude expects as the key of each answer.
    texts: list[str] = field(default_factory=list)


class ClaudeStreamChannel(Channel):
    name = "claude-stream-json"
    asks = True
    poll_s = POLL_S

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.pending: dict[str, _Pending] = {}
        self.result_seen = False
        #: When the plan's limit resets, from the last `rate_limit_event` that said it was reached.
        self.limit_reset_at: float | None = None
        #: The lead's "allow always" rules for this lane (`state.allow`); None without a lane folder.
        self.rules = RuleBook(self.ctx.lane_dir) if self.ctx.lane_dir is not None else None

    # --- start -----------------------------------------------------------------------------------

    def render_argv(self, prompt: str, worktree: Path) -> list[str]:
        """The preset's argv (the prompt never as an argument) plus the flags of the control protocol."""
        argv = dataclasses.replace(self.ctx.provider, prompt="stdin").render_argv(prompt, worktree)
        for flag, value in zip(CLAUDE_PERMISSION_ARGS[::2], CLAUDE_PERMISSION_ARGS[1::2], strict=True):
            if flag not in argv:
                argv += [flag, value]
        return argv

    @property
    def stdin_pipe(self) -> bool:
        return True

    @property
    def keep_stdin_open(self) -> bool:
        return True

    def stdin_payload(self, prompt: str) -> bytes | None:
        return user_message(prompt)

    # --- the stream ------------------------------------------------------------------------------

    def on_line(self, line: bytes) -> None:
        msg = json_line(line)
        if msg is None:
            return
        kind = msg.get("type")
        meters = self.ctx.meters
        if kind == "system" and msg.get("subtype") == "init":
            self.session(msg.get("session_id"))
            if isinstance(msg.get("model"), str):
                meters.set_model(msg["model"])
        elif kind == "assistant":
            message = msg.get("message")
            self._api_error(assistant_error(msg, self.limit_reset_at))
            if isinstance(message, Mapping) and isinstance(message.get("id"), str) and "usage" in message:
                usage = claude_usage(message["usage"])
                meters.set_message(message["id"], usage)
                if msg.get("parent_tool_use_id") is None:
                    meters.set_context(usage.input)
        elif kind == "system" and msg.get("subtype") == "api_retry":
            retry = retry_delay(msg)
            if retry is not None:
                self.report_retry(*retry)
                record(self.ctx.lane_dir, self.ctx.clock.time(), "api-retry", provider=self.ctx.provider.name,
                       delay_s=retry[0], detail=retry[1])
        elif kind == "rate_limit_event":
            self.limit_reset_at = rejected_reset(msg) or self.limit_reset_at
        elif kind == "result":
            self._result(msg)
        elif kind == "control_request":
            self._control_request(msg)
        elif kind == "control_cancel_request":
            request_id = msg.get("request_id")
            if isinstance(request_id, str):
                self._withdraw(request_id, "the agent withdrew the request")

    def _api_error(self, error: ClaudeError | None) -> None:
        if error is None:
            return
        before = self.error
        self.report_error(error.kind, error.detail, error.reset_at)
        if self.error != before:
            record(self.ctx.lane_dir, self.ctx.clock.time(), "api-error", provider=self.ctx.provider.name,
                   kind=error.kind, detail=self.error.detail if self.error else error.detail, reset_at=error.reset_at)

    def _result(self, msg: Mapping[str, Any]) -> None:
        self.session(msg.get("session_id"))
        if msg.get("is_error") is True:
            if self.error is None:
                self._api_error(result_error(msg, self.limit_reset_at))
        elif msg.get("is_error") is False:
            self.error = None  # the turn succeeded after all: an earlier error was retried away
        if "usage" in msg:
            self.ctx.meters.set_total(claude_usage(msg["usage"]))
        self.ctx.meters.set_context_window(claude_context_window(msg, self.ctx.meters.model))
        cost = msg.get("total_cost_usd")
        if isinstance(cost, int | float) and not isinstance(cost, bool) and cost >= 0:
            self.ctx.meters.set_cost(float(cost), "reported")
        self.result_seen = True
        for request_id in list(self.pending):
            self._withdraw(request_id, "the agent finished before the answer was delivered")
        self.ctx.meters.flush()
        self.io.close_input()

    def _control_request(self, msg: Mapping[str, Any]) -> None:
        request_id, request = msg.get("request_id"), msg.get("request")
        if not isinstance(request_id, str) or not request_id or not isinstance(request, Mapping):
            log.warning("ignoring a malformed control_request: %.200s", msg)
            return
        if request_id in self.pending:
            return
        if request.get("subtype") != "can_use_tool":
            # hook callbacks, MCP messages: nothing the lead answers; an error keeps the CLI from hanging.
            self.io.write(control_response(request_id, error=f"unsupported control request "
                                                             f"{str(request.get('subtype'))[:80]!r}"))
            return
        tool = str(request.get("tool_name") or "tool")[:100]
        tool_input = request.get("input")
        pending = _Pending(request_id, tool, dict(tool_input) if isinstance(tool_input, Mapping) else {})
        inbox = self.ctx.inbox
        try:
            if inbox is None:
                raise LanesError("no inbox", "")
            if tool == "AskUserQuestion" and self._ask_user_questions(pending):
                pass
            else:
                pending.questions.append(inbox.ask(
                    self.ctx.lane, kind="permission", title=permission_title(tool, pending.tool_input),
                    body=self._body(request, pending.tool_input), attempt=self.ctx.attempt,
                    source="claude-stdio", correlation={"request_id": request_id, "tool_name": tool,
                                                        "subject": permission_subject(tool, pending.tool_input)}))
        except (LanesError, OSError) as exc:
            log.warning("cannot ask the lead about %s (%s): denying", request_id, exc)
            for question in pending.questions:
                self._cancel(question.id, "lanes-tui could not ask the whole question")
            self.io.write(control_response(request_id, {"behavior": "deny",
                                                        "message": "lanes-tui could not ask the lead."}))
            return
        self.pending[request_id] = pending
        self._try_deliver(request_id)  # a rule of the lead's may allow it at once

    def _ask_user_questions(self, pending: _Pending) -> bool:
        """AskUserQuestion: one inbox question per question Claude asks; False if the input is unusable."""
        inbox = self.ctx.inbox
        asked = pending.tool_input.get("questions")
        if inbox is None or not isinstance(asked, list) or not 0 < len(asked) <= MAX_ASK_QUESTIONS:
            return False
        if not all(isinstance(q, Mapping) and isinstance(q.get("question"), str) and q["question"].strip()
                   for q in asked):
            return False
        for index, item in enumerate(asked):
            text: str = item["question"]
            raw = item.get("options") if isinstance(item.get("options"), list) else []
            labels = [str(o.get("label")).strip() for o in raw
                      if isinstance(o, Mapping) and isinstance(o.get("label"), str) and o["label"].strip()]
            notes = [f"{o['label']}: {o['description']}" for o in raw if isinstance(o, Mapping)
                     and isinstance(o.get("label"), str) and isinstance(o.get("description"), str)]
            single = bool(labels) and not item.get("multiSelect") and len(set(labels)) == len(labels)
            body = "\n".join(notes)
            if labels and not single:
                body += "\nAnswer with the labels, separated by commas."
            correlation = {"request_id": pending.request_id, "question_index": index}
            try:
                question = inbox.ask(self.ctx.lane, kind="choice" if single else "text",
                                     title=truncate(" ".join(text.split()), 480),
                                     body=truncate(body.strip(), MAX_BODY_CHARS),
                                     options=labels if single else (), attempt=self.ctx.attempt,
                                     source="claude-stdio", correlation=correlation)
            except LanesError:
                if index == 0 and not pending.questions:
                    return False  # e.g. odd labels: ask it as a plain permission instead
                raise
            pending.questions.append(question)
            pending.texts.append(text)
        return True

    @staticmethod
    def _body(request: Mapping[str, Any], tool_input: Mapping[str, Any]) -> str:
        body = json.dumps(tool_input, indent=2, ensure_ascii=False, default=str)
        reason = request.get("decision_reason") or request.get("blocked_path")
        if isinstance(reason, str) and reason:
            body = f"{reason}\n\n{body}"
        return truncate(body, MAX_BODY_CHARS)

    # --- answers ---------------------------------------------------------------------------------

    @property
    def needs_beat(self) -> bool:
        """Only a pending permission request has an answer to wait for."""
        return bool(self.pending)

    async def tick(self) -> None:
        for request_id in list(self.pending):
            self._try_deliver(request_id)
        await super().tick()

    def _try_deliver(self, request_id: str) -> None:
        pending = self.pending[request_id]
        inbox = self.ctx.inbox
        if inbox is None:
            return
        self._allow_by_rule(pending)
        views: list[QuestionView] = []
        for question in pending.questions:
            try:
                views.append(inbox.get(question.id))
            except LanesError as exc:
                log.warning("question %s of %s cannot be read (%s): withdrawing", question.id, request_id, exc)
                self._answer_withdrawn(request_id)
                return
        states = {v.state for v in views}
        if states & {"cancelled", "orphaned", "delivered"}:
            self._answer_withdrawn(request_id)
        elif states <= {"answered", "expired"}:
            response = self._response(pending, views)
            del self.pending[request_id]
            if not self.io.write(control_response(request_id, response)):
                for view in views:
                    self._cancel(view.question.id, "the agent stopped listening before the answer was sent")
                return
            for view in views:
                if view.state == "answered":
                    try:
                        inbox.deliver(view.question.id)
                    except LanesError as exc:
                        log.warning("cannot mark %s delivered: %s", view.question.id, exc)

    def _allow_by_rule(self, pending: _Pending) -> None:
        """A permission the lead allowed for this lane (`state.allow`): its open question is answered
        yes by `rule` (the inbox shows it so) and the lane's events say which rule; delivery follows."""
        if self.rules is None or pending.texts or len(pending.questions) != 1 or self.ctx.inbox is None:
            return
        subject = permission_subject(pending.tool, pending.tool_input)
        rule = self.rules.match(pending.tool, subject)
        if rule is None or self.ctx.lane_dir is None:
            return
        qid = pending.questions[0].id
        try:
            self.ctx.inbox.answer(qid, "yes", by="rule")
        except LanesError as exc:  # answered or withdrawn meanwhile: that answer stands
            log.info("rule %s did not answer %s: %s", rule.describe(), qid, exc)
            return
        try:
            record_auto_allow(self.ctx.lane_dir, self.ctx.clock, rule, subject=subject, question=qid)
        except OSError as exc:
            log.warning("cannot record the allow of %s: %s", qid, exc)

    def _response(self, pending: _Pending, views: list[QuestionView]) -> dict[str, Any]:
        if not pending.texts:
            value = views[0].answer if views else None
            if value == "yes":
                return {"behavior": "allow", "updatedInput": pending.tool_input}
            return {"behavior": "deny", "message": DENY_MESSAGE}
        answers: dict[str, str] = {}
        for text, view in zip(pending.texts, views, strict=True):
            value = view.answer
            if value is None:
                return {"behavior": "deny", "message": WITHDRAWN_MESSAGE}
            labels = {o.id: o.label for o in view.question.options}
            answers[text] = labels.get(value, value)
        return {"behavior": "allow", "updatedInput": {**pending.tool_input, "answers": answers}}

    def _answer_withdrawn(self, request_id: str) -> None:
        """Our question went away (orphaned, unreadable) while the CLI still waits: deny, never hang it."""
        pending = self.pending.pop(request_id)
        for question in pending.questions:
            self._cancel(question.id, "another part of the request was withdrawn")
        self.io.write(control_response(request_id, {"behavior": "deny", "message": WITHDRAWN_MESSAGE}))

    def _withdraw(self, request_id: str, reason: str) -> None:
        """The request is no longer pending at the agent: cancel its questions and write nothing."""
        pending = self.pending.pop(request_id, None)
        if pending is None:
            return
        for question in pending.questions:
            self._cancel(question.id, reason)

    def _cancel(self, qid: str, reason: str) -> None:
        cancel_question(self.ctx.inbox, qid, reason)

    def close(self) -> None:
        """The agent died with requests pending: its questions are orphaned (shown, never delivered)."""
        for pending in self.pending.values():
            for question in pending.questions:
                orphan_question(self.ctx.inbox, question.id)
        self.pending.clear()
        super().close()

