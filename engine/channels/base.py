"""What every channel shares: its context, the way back to the agent, and the no-op defaults.

A channel is the supervisor's reading of one provider run: it sees every output line (already
framed by `lanes.agent_run`), and, for a pseudo-terminal, the raw bytes; it can write to the agent's stdin
(or terminal); it opens inbox questions and, on each tick, delivers their answers. The supervisor that
owns the agent's pipes is the only one that talks to it, so a channel survives a dashboard restart.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from lanes_tui.engine.config.providers import ProviderConfig
from lanes_tui.engine.core.clock import Clock
from lanes_tui.engine.core.errors import LanesError
from lanes_tui.engine.inbox.store import InboxStore
from lanes_tui.engine.state.meters import FLUSH_S, RunMeter

log = logging.getLogger(__name__)

#: How often a channel looks for answers, independent of the watchdog's `sample_s`, so an answer
#: reaches the agent within a tenth of a second of the lead typing it.
POLL_S = 0.1
#: A question's body shows at most this much of a tool's input (the inbox refuses more than 64 KiB).
MAX_BODY_CHARS = 16_000
#: What a provider's API said went wrong, as a channel reads it from the CLI's structured fields
#: (`Channel.report_error`); `lanes.classify` maps each kind to a result, text patterns are the fallback.
#:   billing      no credit / balance left                    → OUT-OF-BUDGET (the chain moves on)
#:   auth         missing, invalid or refused credentials     → CONFIG-ERROR (`doctor` names the fix)
#:   forbidden    the key may not use this model / endpoint   → CONFIG-ERROR
#:   model        the model name is unknown                   → CONFIG-ERROR
#:   trust        the CLI refuses the folder it runs in       → CONFIG-ERROR
#:   rate_limit   too many requests for now                   → retried in the lane with back-off, then fallback
#:   overloaded   the provider is overloaded (529, 503)       → as rate_limit
#:   server       a 5xx from the provider                     → as rate_limit
#:   usage_limit  the plan's quota, with a reset time         → OUT-OF-BUDGET; parked until `reset_at`
ERROR_KINDS = ("billing", "auth", "forbidden", "model", "trust", "rate_limit", "overloaded", "server",
               "usage_limit")


@dataclass(frozen=True)
class ProviderError:
    """One error the provider's API returned, read from the CLI's structured output."""

    kind: str  # one of ERROR_KINDS
    detail: str  # the CLI's own words, one line, for the why column
    reset_at: float | None = None  # usage_limit: when the quota resets (seconds since the epoch)


class AgentIO(Protocol):
    """The way back to the running agent: its stdin pipe, or the pseudo-terminal's master side."""

    def write(self, data: bytes) -> bool:
        """Send bytes now; False if the agent can no longer be written to."""
        ...

    def close_input(self) -> None:
        """End the agent's input (EOF on a pipe; nothing for a terminal)."""
        ...

    def refresh(self) -> None:
        """Take in the output the agent has written so far (a terminal's screen must be current)."""
        ...


class _NoIO:
    """Before the agent is started, and for agents without input: writes go nowhere."""

    def write(self, data: bytes) -> bool:
        return False

    def close_input(self) -> None:
        return None

    def refresh(self) -> None:
        return None


@dataclass
class ChannelContext:
    """Everything a channel needs from the supervisor, injected so channels are tested without one."""

    lane: str
    attempt: int
    provider: ProviderConfig
    inbox: InboxStore | None
    meters: RunMeter
    clock: Clock
    on_session: Callable[[str], None] = lambda session_id: None
    #: The lane's folder in the state (its `allow.json` rules, its events); None in channel unit tests.
    lane_dir: Path | None = None


class Channel:
    """The `plain` behaviour, and the hooks every other channel overrides.

    Life cycle, driven by `AgentRun`: `render_argv` and `stdin_payload` before the start, `attach`
    once the process runs, `on_output` / `on_line` for everything it prints, `tick` every `poll_s`
    (a channel that `asks`; the others `flush_due` after output and at each sample),
    `close` when it has exited. Hooks run on the supervisor's event loop, one at a time, so a channel
    needs no locks; an exception in one is logged by the caller and never ends the lane.
    """

    name = "plain"
    #: Run the agent in a pseudo-terminal instead of pipes.
    uses_pty = False
    #: Opens inbox questions itself, so the lane's `waiting` state is checked on every tick.
    asks = False
    #: Seconds between ticks: short where answers are delivered, relaxed where only meters are written.
    poll_s = FLUSH_S
    #: When set, `on_line` only cares for lines containing these bytes (aider's `Tokens:` line).
    line_marker: bytes | None = None

    def __init__(self, ctx: ChannelContext) -> None:
        self.ctx = ctx
        self.io: AgentIO = _NoIO()
        #: The last API error the CLI reported (`report_error`); None when it reported none.
        self.error: ProviderError | None = None
        #: Until when (the context clock's time) the CLI said it waits before retrying by itself
        #: (`report_retry`): silence until then is not a stall.
        self.retrying_until: float | None = None

    # --- before the start ------------------------------------------------------------------------

    def render_argv(self, prompt: str, worktree: Path) -> list[str]:
        return self.ctx.provider.render_argv(prompt, worktree)

    @property
    def stdin_pipe(self) -> bool:
        """Whether the agent gets a stdin pipe (otherwise /dev/null, or the terminal)."""
        return self.ctx.provider.prompt == "stdin"

    @property
    def keep_stdin_open(self) -> bool:
        """False: stdin is closed right after the prompt, so a CLI reading to EOF starts working."""
        return False

    def stdin_payload(self, prompt: str) -> bytes | None:
        return prompt.encode("utf-8") if self.ctx.provider.prompt == "stdin" else None

    # --- while it runs ---------------------------------------------------------------------------

    def attach(self, io: AgentIO) -> None:
        self.io = io

    def on_output(self, chunk: bytes) -> None:
        """Raw output bytes, before framing (only the terminal channel needs them)."""

    def on_line(self, line: bytes) -> None:
        """One output line without its newline."""

    def on_block(self, block: bytes) -> None:
        """The complete lines of one read, joined by newlines: each to `on_line`, unless the channel
        reads only lines holding `line_marker` and the block has none (a flood costs one scan)."""
        if self.line_marker is not None and self.line_marker not in block:
            return
        for line in block.split(b"\n"):
            try:
                self.on_line(line)
            except Exception:  # a parser bug on one line must not lose the lines after it
                log.exception("%s channel failed on a line", self.name)

    @property
    def needs_beat(self) -> bool:
        """Whether a channel that `asks` must tick every `poll_s` now, or may rest until more output.

        True by default (a terminal's screen is watched for prompts); a channel whose ticks only
        deliver answers says False while nothing is pending, so a quiet agent costs no wake-ups.
        """
        return True

    async def tick(self) -> None:
        """Deliver answers, detect prompts, write the meters when due (every `poll_s` if `asks`)."""
        self.flush_due()

    def flush_due(self) -> None:
        """Write the meters if they changed and the last write is old enough.

        A channel that does not `ask` gets no beat of its own: this runs after each batch of output
        and at each watchdog sample, so a silent agent costs its supervisor no wake-ups.
        """
        self.ctx.meters.maybe_flush()

    def close(self) -> None:
        """The agent has exited: withdraw what can no longer be answered, write the meters."""
        self.ctx.meters.flush()

    # --- helpers for subclasses ------------------------------------------------------------------

    def report_error(self, kind: str, detail: str, reset_at: float | None = None) -> None:
        """The CLI said, in a structured field, that the API refused it: the last report wins."""
        if kind not in ERROR_KINDS:
            raise ValueError(f"unknown provider error kind {kind!r}")
        self.error = ProviderError(kind, " ".join(detail.split())[:300], reset_at)

    def report_retry(self, delay_s: float, detail: str = "") -> None:
        """The CLI said it retries by itself after `delay_s` seconds (Claude's `api_retry` line, …)."""
        if delay_s >= 0:
            self.retrying_until = self.ctx.clock.time() + delay_s

    def session(self, session_id: Any) -> None:
        """Record the agent's own session / thread id (the resume id) once it is known."""
        if not isinstance(session_id, str) or not session_id or session_id == self.ctx.meters.session_id:
            return
        self.ctx.meters.set_session(session_id)
        try:
            self.ctx.on_session(session_id)
        except Exception:
            log.exception("recording session id %s failed", session_id)


def cancel_question(inbox: InboxStore | None, qid: str, reason: str) -> None:
    """Withdraw a question the agent no longer waits on; one already finished is left as it is."""
    if inbox is None:
        return
    try:
        inbox.cancel(qid, reason)
    except LanesError as exc:
        log.info("cannot cancel %s: %s", qid, exc)


def orphan_question(inbox: InboxStore | None, qid: str) -> None:
    """Mark a question whose agent died; shown, never delivered, its answer can seed the next attempt."""
    if inbox is None:
        return
    try:
        inbox.orphan(qid, "the agent exited before the answer was delivered")
    except LanesError as exc:
        log.info("cannot orphan %s: %s", qid, exc)


def json_line(line: bytes | str) -> dict[str, Any] | None:
    """One JSON object per line, or None for anything else (a warning on stderr, a torn line)."""
    text = line.strip()
    if text[:1] not in (b"{", "{"):
        return None
    try:
        value = json.loads(text)
    except (ValueError, RecursionError):
        return None
    return value if isinstance(value, dict) else None


def number(value: Any) -> int:
    """A token count from untrusted JSON: a non-negative integer, else 0."""
    if isinstance(value, bool) or not isinstance(value, int | float) or value != value or value < 0:
        return 0
    return int(value)


def truncate(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: max(0, limit - 1)] + "…"
