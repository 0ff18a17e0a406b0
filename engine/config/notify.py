"""The `[notify]` table: a command run once per event that needs the lead, even with no dashboard open.

Off by default (no `command`): lanes-tui never starts a program the lead did not name. The command is
an argv list, never a shell line; its elements may hold the placeholders `{title}`, `{body}`, `{lane}`
and `{event}`, filled element by element when an event is announced (`lanes.notify`). `events` picks
which events are announced (all of `NOTIFY_EVENTS` by default).

Split from `settings` to keep that module small, like `review`: it reads through the parser's own
checks (`ReviewChecks`) rather than importing `settings`, which imports this module.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from lanes_tui.engine.config.key_lines import did_you_mean
from lanes_tui.engine.config.providers import PLACEHOLDER_RE
from lanes_tui.engine.config.review import ReviewChecks

__all__ = ["NOTIFY_EVENTS", "NOTIFY_PLACEHOLDERS", "NotifyConfig", "parse_notify"]

#: What can be announced: a question asked, a stall, a lane ready or rejected, a lane lost, a cap hit
#: (the lane ended FAILED-RESOURCE).
NOTIFY_EVENTS = ("question", "stall", "ready", "rejected", "lost", "cap")
NOTIFY_PLACEHOLDERS = ("title", "body", "lane", "event")
_NOTIFY_KEYS = ("command", "events", "timeout_s")


@dataclass(frozen=True)
class NotifyConfig:
    """The `[notify]` table as validated: the defaults announce nothing."""

    #: The argv to run, placeholders unfilled; empty: notifications are off.
    command: tuple[str, ...] = ()
    events: tuple[str, ...] = NOTIFY_EVENTS
    #: How long the command may run before it is killed (a notifier that hangs must not pile up).
    timeout_s: float = 10

    @property
    def enabled(self) -> bool:
        return bool(self.command)


def parse_notify(checks: ReviewChecks, raw: dict[str, Any]) -> NotifyConfig:
    """`[notify] command = ["notify-send", "{title}", "{body}"]`, `events = ["stall"]` → NotifyConfig;
    ConfigError at the first mistake (an unknown placeholder or event names the nearest known one)."""
    checks.unknown_keys("notify", raw, _NOTIFY_KEYS)
    command = checks.strings("notify.command", raw.get("command", []))
    for part in command:
        unknown = [name for name in PLACEHOLDER_RE.findall(part) if name not in NOTIFY_PLACEHOLDERS]
        if unknown:
            checks.fail("notify.command", f"unknown placeholder {{{unknown[0]}}} in {part!r}",
                        did_you_mean(unknown[0], NOTIFY_PLACEHOLDERS))
    events = checks.strings("notify.events", raw.get("events", list(NOTIFY_EVENTS)))
    for event in events:
        if event not in NOTIFY_EVENTS:
            checks.fail("notify.events", f"{event!r} is not an event lanes-tui announces",
                        did_you_mean(event, NOTIFY_EVENTS))
    return NotifyConfig(
        command=command,
        events=tuple(dict.fromkeys(events)),
        timeout_s=checks.number("notify.timeout_s", raw.get("timeout_s", 10), positive=True),
    )
