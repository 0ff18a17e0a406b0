"""The `pty` channel: any CLI in a pseudo-terminal, its prompts read off the rendered screen.

The fallback of INBOX.md for agents without a structured channel (e.g. aider run interactively).
A prompt found by `screen.Screen.detect` becomes a yes/no question (source `pty`) tied to the
fingerprint of the screen it was seen on. The delivery rules keep a stale answer from being typed:

* if the screen changes while the question is open — the prompt vanished, or was redrawn with
  something else — the question is cancelled, whether or not an answer has arrived; nothing is typed;
* just before typing, the terminal is read again and the fingerprint compared once more;
* the answer goes in as an explicit key (`y` / `n`), a short pause, then Enter — never a bare Enter,
  which could pick a destructive default.

aider's token and cost line feeds the meters here as in the plain channel.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType
from typing import Any

from lanes_tui.engine.channels.base import POLL_S, Channel, cancel_question, orphan_question, truncate
from lanes_tui.engine.channels.plain import feed_aider_line
from lanes_tui.engine.channels.screen import COLUMNS, ROWS, PromptPatterns, Screen
from lanes_tui.engine.core.errors import LanesError

log = logging.getLogger(__name__)

#: The key typed for each answer; Enter follows after `KEY_PAUSE_S`.
ANSWER_KEYS: Mapping[str, bytes] = MappingProxyType({"yes": b"y", "no": b"n"})
ENTER = b"\r"
KEY_PAUSE_S = 0.1
MAX_TITLE_CHARS = 300


@dataclass
class _Open:
    """The one question this terminal has open, and the screen it was asked about."""

    qid: str
    fingerprint: str


class PtyChannel(Channel):
    name = "pty"
    uses_pty = True
    asks = True
    poll_s = POLL_S

    def __init__(self, *args: Any, patterns: PromptPatterns | None = None, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.screen = Screen(patterns or PromptPatterns.for_provider(self.ctx.provider), self.ctx.clock,
                             columns=COLUMNS, rows=ROWS)
        self.open: _Open | None = None
        #: The screen last asked about: the same screen is never asked about twice.
        self.handled: str | None = None

    @property
    def stdin_pipe(self) -> bool:
        return False

    def stdin_payload(self, prompt: str) -> bytes | None:
        """A "stdin" prompt is typed into the terminal and sent with Enter, as a person would."""
        return prompt.encode("utf-8") + ENTER if self.ctx.provider.prompt == "stdin" else None

    def render_argv(self, prompt: str, worktree: Path) -> list[str]:
        return self.ctx.provider.render_argv(prompt, worktree)

    def on_output(self, chunk: bytes) -> None:
        self.screen.feed(chunk)

    line_marker = b"Tokens:"

    def on_line(self, line: bytes) -> None:
        if b"Tokens:" in line:
            feed_aider_line(self.ctx.meters, line.decode("utf-8", errors="replace"))

    async def tick(self) -> None:
        self.io.refresh()
        if self.open is not None:
            await self._follow(self.open)
        else:
            self._detect()
        await super().tick()

    def _detect(self) -> None:
        inbox = self.ctx.inbox
        if inbox is None:
            return
        match = self.screen.detect()
        if match is None or match.fingerprint == self.handled:
            return
        self.handled = match.fingerprint
        try:
            question = inbox.ask(self.ctx.lane, kind="yesno", title=truncate(match.line, MAX_TITLE_CHARS),
                                 body=truncate(match.context, 8000), attempt=self.ctx.attempt, source="pty",
                                 correlation={"screen_fingerprint": match.fingerprint, "pattern": match.pattern})
        except (LanesError, OSError) as exc:
            log.warning("cannot ask about the terminal prompt %r: %s", match.line, exc)
            return
        self.open = _Open(question.id, match.fingerprint)

    async def _follow(self, open_q: _Open) -> None:
        inbox = self.ctx.inbox
        assert inbox is not None
        try:
            view = inbox.get(open_q.qid)
        except LanesError as exc:
            log.warning("terminal question %s cannot be read: %s", open_q.qid, exc)
            self.open = None
            return
        if view.state not in ("open", "answered"):
            self.open = None
            return
        if self.screen.fingerprint() != open_q.fingerprint:
            self.open = None
            self._cancel(open_q.qid, "the prompt changed or vanished before an answer was sent")
            return
        key = ANSWER_KEYS.get(view.answer or "") if view.state == "answered" else None
        if key is None:
            return
        self.open = None
        if not self.io.write(key):
            self._cancel(open_q.qid, "the terminal could not be written to")
            return
        await self.ctx.clock.sleep(KEY_PAUSE_S)
        self.io.write(ENTER)
        try:
            inbox.deliver(open_q.qid)
        except LanesError as exc:
            log.warning("cannot mark %s delivered: %s", open_q.qid, exc)

    def _cancel(self, qid: str, reason: str) -> None:
        cancel_question(self.ctx.inbox, qid, reason)

    def close(self) -> None:
        """The agent died at its prompt: the question is orphaned (shown, never typed anywhere)."""
        if self.open is not None:
            orphan_question(self.ctx.inbox, self.open.qid)
            self.open = None
        super().close()
