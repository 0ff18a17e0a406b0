"""The lead's hands on the selected lane from the dashboard: `t` attaches, `T` sends one line.

`t` asks the lane's supervisor what it runs (`lane_hands`). A terminal lane: the dashboard suspends
(`App.suspend`), the same passthrough as `lanes-tui attach` takes the terminal, and the detach key
brings the dashboard back with the lane still running. A claude stream-json lane: the conversation
view (`widgets.conversation`), read from the lane's files, with a message line sent through the
socket; a conversation lane that has ended opens read-only. A plain lane has nothing to attach to.

With lanes marked (space, `comment_flows`), `T` sends one message to each of them
(`Engine.broadcast`): the lanes that cannot take it are named with why.

The socket calls block (a few milliseconds; `send` to a terminal may wait up to two seconds for
the screen to be still), so they run in a thread and never stall the dashboard.
"""

from __future__ import annotations

import asyncio
from typing import Any

from textual import work
from textual.app import SuspendNotSupported

from lanes_tui import widgets  # the dialogs' modules load on their keys
from lanes_tui.app.dashboard.flows import DecisionFlows
from lanes_tui.engine import LanesError
from lanes_tui.widgets import LanesTable

__all__ = ["HandsFlows"]

#: The states in which a lane's agent runs and may take a line from the lead.
SENDABLE_STATES = ("running", "waiting")


class HandsFlows(DecisionFlows):
    """Mixed into the dashboard screen like `DecisionFlows`."""

    @work(group="hands", exclusive=True)
    async def action_attach(self) -> None:
        lane = self._need_lane()
        if lane is None:
            return
        from lanes_tui.engine import lane_hands  # the control client: on the key, not at start-up

        repo = self.lanes_app.engine.repo
        hands = await self._guard(lambda: asyncio.to_thread(lane_hands, repo, lane))
        if hands is None:
            return
        mode = hands.get("mode") if hands.get("running") else None
        if mode == "pty":
            self._attach_terminal(lane)
        elif mode == "conversation":
            self._open_conversation(lane, live=True)
        elif hands.get("live") and hands.get("running"):
            self.app.notify(f"{lane} runs on pipes: there is no terminal or conversation to attach to; "
                            "its output is in the Output tab", title="Attach", severity="warning")
        elif await self._has_conversation(lane):
            self._open_conversation(lane, live=False)
        else:
            self.app.notify(f"{lane} is not running ({hands.get('state')}): nothing to attach to; "
                            "its output is in the Output tab", title="Attach", severity="warning")

    async def _has_conversation(self, lane: str) -> bool:
        from lanes_tui.engine import conversation

        turns = await self._guard(lambda: asyncio.to_thread(conversation, self.lanes_app.engine.repo, lane))
        return bool(turns) and any(t.role in ("assistant", "result") for t in turns or ())

    def _attach_terminal(self, lane: str) -> None:
        """The dashboard steps aside; the attach client has the terminal until the detach key."""
        from lanes_tui.app.attach_client import DEFAULT_DETACH, attach

        engine = self.lanes_app.engine
        key = engine.config.keys.get("attach.detach") or DEFAULT_DETACH
        try:
            with self.app.suspend():
                said = attach(engine.repo, lane, detach=key)
        except SuspendNotSupported:
            self.app.notify("this terminal cannot hand itself over: run `lanes-tui attach "
                            f"{lane}` in another terminal", title="Attach", severity="warning")
            return
        except LanesError as exc:
            self.app.notify(str(exc), title="Refused", severity="error", timeout=10)
            return
        self.app.notify(said, title="Detached")

    def _open_conversation(self, lane: str, *, live: bool) -> None:
        from lanes_tui.engine import conversation
        from lanes_tui.widgets.conversation import ConversationScreen  # the view and its parser: on the key

        repo = self.lanes_app.engine.repo

        async def load() -> Any:
            try:
                return await asyncio.to_thread(conversation, repo, lane)
            except LanesError:
                return []

        async def send(text: str) -> str:
            reply = await self.lanes_app.engine.send(lane, text)
            return f"sent ({reply.get('via')})"

        self.app.push_screen(ConversationScreen(lane, load=load, send=send if live else None))

    @work(group="hands-send", exclusive=True)
    async def action_send_line(self) -> None:
        if self.query_one(LanesTable).marked_lanes:
            await self._send_to_marked()
            return
        lane = self._need_lane()
        if lane is None or not self._takes_a_line(lane):
            return
        text = await self.app.push_screen_wait(widgets.ReasonModal(
            f"Send to {lane}", ["One line for the agent: a user message for a conversation (claude stream-json) "
                                "lane; the text and Enter for a terminal lane, once its screen is still."],
            placeholder="a message"))
        if text is None:
            return
        engine = self.lanes_app.engine  # its runner reaches the lane: its supervisor here, or a cluster node
        reply = await self._guard(lambda: engine.send(lane, text))
        if reply is not None:
            self.app.notify(f"{lane}: {text}", title=f"Sent ({reply.get('via')})")

    def _takes_a_line(self, lane: str) -> bool:
        """Whether the lane's agent runs, from the status on screen: a lane that ended is refused before
        the lead types a word, with its state and what to do instead (the supervisor refuses anyway)."""
        from lanes_tui.engine import RECOVERABLE  # decisions.recover: not needed for the first frame

        status = self.lanes.get(lane)
        if status is None or status.state in SENDABLE_STATES:
            return True
        if status.state in ("queued", "launching"):
            then = "its agent has not started yet: send once the lane is running"
        elif status.state in RECOVERABLE:  # a relaunch is how such a lane gets more to do
            then = f"no agent takes a line; `{self.lanes_app.engine.config.keys.get('recover', 'r')}` relaunches " \
                   "it with a note"
        else:
            then = "no agent takes a line"
        self.app.notify(f"{lane} is not running ({status.state}: {status.state_reason}): {then}",
                        title="Send", severity="warning")
        return False

    async def _send_to_marked(self) -> None:
        """One message to each marked lane; the marks go once it is sent (they were for this message)."""
        table = self.query_one(LanesTable)
        lanes = table.marked_lanes
        text = await self.app.push_screen_wait(widgets.ReasonModal(
            f"Send to {len(lanes)} marked lane{'' if len(lanes) == 1 else 's'}",
            [", ".join(lanes), "One line for each agent, as T sends it to one lane; a lane that cannot take it "
                               "(not running, a plain lane) is skipped and named. space unmarks a lane."],
            placeholder="a message"))
        if text is None:
            return
        report = await self._guard(lambda: self.lanes_app.engine.broadcast(lanes, text))
        if report is None:
            return
        table.clear_marks()
        self.app.notify("\n".join(report.lines()), title=f"Sent to {len(report.delivered)} of {len(report.results)}",
                        severity="information" if report.ok else "warning", timeout=15)
