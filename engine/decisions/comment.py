"""The lead's words to lanes beyond one `send`: a comment on a hunk of a lane's diff, and one message
to several lanes.

A hunk comment goes to the lane's running agent the way `lanes-tui send` does (a conversation agent
gets the hunk and the comment as one message; a terminal agent, which takes one line at a time, the
changed lines and the comment on one line). A lane that has ended keeps it (`state.comments`) for its
next attempt: `recover --relaunch` puts it in the findings and drops it once the new lane is started.
A lane that runs but cannot take it now (mid-redraw, a plain lane on pipes) refuses, as `send` does:
a comment is never kept for a relaunch that may never come while its lane is still at work.

`send_to_lanes` is `send A B C` and `send --all-running`: each lane is tried (at once: each waits on
its own supervisor), and each that cannot take the message is listed with why; nothing is retried.

Both take the sender as a callable (`Engine.send` in the dashboard, the command line's own), so a
lane on a cluster node is reached the same way its single `send` reaches it.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from lanes_tui.engine.core.clock import Clock
from lanes_tui.engine.core.errors import LanesError
from lanes_tui.engine.lanes.control_client import lane_hands
from lanes_tui.engine.state.comments import HunkComment, keep_comment, read_comments
from lanes_tui.engine.state.paths import StatePaths
from lanes_tui.engine.state.store import LaneStore

__all__ = ["Broadcast", "CommentOutcome", "SendResult", "Sender", "comment_on_lane", "kept_comments",
           "running_lanes", "send_to_lanes"]

#: `send(lane_id, text)` → the supervisor's reply (`via`), or LanesError when refused.
Sender = Callable[[str, str], Awaitable[dict[str, Any]]]
#: The states in which a lane has (or is about to have again) an agent to talk to: `--all-running`.
TALKING_STATES = ("running", "waiting")


@dataclass(frozen=True)
class CommentOutcome:
    """Where a hunk comment went: to the running agent (`delivered`, `via`), or kept (`kept` in all)."""

    lane_id: str
    delivered: bool
    via: str | None = None
    kept: int = 0

    def describe(self) -> str:
        if self.delivered:
            return f"sent to {self.lane_id} ({self.via})"
        return (f"{self.lane_id} has ended: the comment is kept ({self.kept} in all) for its next attempt; "
                f"relaunch it to hand them over (recover → relaunch, `lanes-tui recover {self.lane_id} --relaunch`)")


async def comment_on_lane(repo: Path, lane_id: str, comment: HunkComment, send: Sender, *,
                          clock: Clock | None = None) -> CommentOutcome:
    """Deliver `comment` to the lane's agent, or keep it for the next attempt when the lane has ended."""
    store = LaneStore(StatePaths(repo), clock)
    record = await asyncio.to_thread(store.read, lane_id)
    if record.state == "abandoned":
        raise LanesError(f"lane {lane_id} is abandoned: no attempt of it will read the comment",
                         "comment on a lane that runs, or one that can be relaunched")
    if record.superseded_by:
        raise LanesError(f"lane {lane_id} was relaunched as {record.superseded_by}: its comments go there",
                         f"comment on {record.superseded_by}'s diff")
    if record.runner != "local":  # its supervisor is on a node: its runner takes the message, or says why not
        reply = await send(lane_id, comment.message())
        return CommentOutcome(lane_id, True, via=str(reply.get("via")))
    hands = await asyncio.to_thread(lane_hands, repo, lane_id)
    if hands.get("live"):
        text = comment.one_line() if hands.get("mode") == "pty" else comment.message()
        reply = await send(lane_id, text)
        return CommentOutcome(lane_id, True, via=str(reply.get("via")))
    kept = await asyncio.to_thread(keep_comment, store.lane_paths(lane_id).dir, comment)
    return CommentOutcome(lane_id, False, kept=len(kept))


def kept_comments(repo: Path, lane_id: str) -> list[HunkComment]:
    """The comments a lane keeps for its next attempt (none for an unknown id)."""
    try:
        lane = StatePaths(repo).lane(lane_id)
    except LanesError:  # not a lane id at all: it keeps nothing
        return []
    return read_comments(lane.dir) if lane.record.is_file() else []


@dataclass(frozen=True)
class SendResult:
    """One lane's part of a broadcast: sent (`via`), or skipped with `why` (`refused`: its supervisor
    said no, rather than there being no agent to ask)."""

    lane_id: str
    sent: bool
    via: str | None = None
    why: str | None = None
    refused: bool = False


@dataclass(frozen=True)
class Broadcast:
    """Every lane's result, in the order asked."""

    results: tuple[SendResult, ...]

    @property
    def delivered(self) -> list[str]:
        return [r.lane_id for r in self.results if r.sent]

    @property
    def skipped(self) -> list[SendResult]:
        return [r for r in self.results if not r.sent]

    @property
    def ok(self) -> bool:
        return bool(self.results) and not self.skipped

    def lines(self) -> list[str]:
        out = [f"sent to {r.lane_id} ({r.via})" for r in self.results if r.sent]
        out.extend(f"skipped {r.lane_id}: {r.why}" for r in self.skipped)
        return out


async def send_to_lanes(lane_ids: Sequence[str], text: str, send: Sender) -> Broadcast:
    """One message to each lane (once each, in the order given); a lane that cannot take it is skipped
    with the reason its `send` gave."""
    if not text.strip():
        raise LanesError("nothing to send: the message is empty", "give the text to send")
    unique = list(dict.fromkeys(lane_ids))
    if not unique:
        raise LanesError("no lanes to send to", "name the lanes, or mark them in the dashboard (space)")

    async def one(lane_id: str) -> SendResult:
        try:
            reply = await send(lane_id, text)
        except LanesError as exc:
            return SendResult(lane_id, False, why=str(exc), refused=bool(getattr(exc, "refused", False)))
        return SendResult(lane_id, True, via=str(reply.get("via")))

    return Broadcast(tuple(await asyncio.gather(*(one(lane_id) for lane_id in unique))))


def running_lanes(repo: Path) -> list[str]:
    """The lanes whose agent runs (`running`, or `waiting` on the lead), oldest first: `--all-running`."""
    records, _broken = LaneStore(StatePaths(repo)).scan()
    live = [r for r in records if r.state in TALKING_STATES]
    return [r.id for r in sorted(live, key=lambda r: (r.created, r.id))]
