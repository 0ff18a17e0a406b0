"""The `gemini-stream-json` channel: `gemini -p … --output-format stream-json` events (PROVIDERS.md).

`init` carries the session id (what `gemini -r` resumes) and the model; `result.stats` the run's
token totals, with `cached` as the part of `input_tokens` served from the cache. Gemini prints no
cost, so the meters estimate one and label it as estimated. `gemini -p` has no answer channel.

What went wrong is read from structure first (`channels.gemini_errors`): the `result` line with
`status: "error"` (the API's own error body inside its message), `error` events, then gemini's stderr
(its set-up failures, its `TerminalQuotaError` with the API's message, its own retries). Each becomes
`report_error(kind, detail, reset_at)` / `report_retry(delay_s)`; the provider's text patterns stay the
fallback for whatever this does not know.
"""

from __future__ import annotations

from collections.abc import Mapping

from lanes_tui.engine.channels.base import Channel, ChannelContext, json_line, number
from lanes_tui.engine.channels.gemini_errors import (
    Found,
    QuotaReading,
    result_error,
    retry_delay,
    setup_error,
)
from lanes_tui.engine.state.meters import Usage


def gemini_usage(stats: object) -> Usage:
    if not isinstance(stats, Mapping):
        return Usage()
    total = number(stats.get("input_tokens", stats.get("input")))
    cached = number(stats.get("cached", stats.get("cached_input_tokens")))
    return Usage(input=total, cached_input=min(total, cached),
                 output=number(stats.get("output_tokens", stats.get("output"))))


class GeminiChannel(Channel):
    name = "gemini-stream-json"

    def __init__(self, ctx: ChannelContext) -> None:
        super().__init__(ctx)
        self._quota = QuotaReading()
        #: The API error the result (or an `error` event) named, before stderr refines it.
        self._found: Found | None = None

    def on_line(self, line: bytes) -> None:
        msg = json_line(line)
        if msg is None:
            self._stderr(line.decode("utf-8", "replace"))
            return
        kind = msg.get("type")
        if kind == "init":
            self.session(msg.get("session_id"))
            if isinstance(msg.get("model"), str):
                self.ctx.meters.set_model(msg["model"])
        elif kind == "result":
            if isinstance(msg.get("stats"), Mapping):
                self.ctx.meters.set_total(gemini_usage(msg["stats"]))
            error = msg.get("error")
            if msg.get("status") == "error" and isinstance(error, Mapping):
                self._api_error(str(error.get("message") or error.get("type") or ""))
        elif kind == "error" and msg.get("severity", "error") == "error":
            self._api_error(str(msg.get("message") or ""))

    def _api_error(self, message: str) -> None:
        found = result_error(message)
        if found is not None:
            self._found = found
            self._report()

    def _stderr(self, text: str) -> None:
        setup = setup_error(text)
        if setup is not None:
            self._found = setup
            self._report()
            return
        delay = retry_delay(text)
        if delay is not None:
            self.report_retry(delay, text.strip())
        if self._quota.feed(text) and self._found is not None:
            self._report()

    def _report(self) -> None:
        """Report what is known now: the result and stderr come on two pipes, in either order."""
        assert self._found is not None
        found = self._quota.refine(self._found)
        reset_at = None if found.reset_in_s is None else self.ctx.clock.time() + found.reset_in_s
        self.report_error(found.kind, found.detail, reset_at if found.kind == "usage_limit" else None)
