"""Channels: how the supervisor reads a provider's output and talks back to it, by the `channel` key.

| channel              | output                         | questions and answers                       |
|----------------------|--------------------------------|---------------------------------------------|
| `plain`              | text (aider's cost line read)  | only through `lanes-tui ask`                |
| `claude-stream-json` | Claude's stream-json           | `control_request` ⇄ `control_response`      |
| `codex-json`         | `codex exec --json` events     | only through `lanes-tui ask`                |
| `gemini-stream-json` | Gemini's stream-json           | only through `lanes-tui ask`                |
| `pty`                | a terminal screen (pyte)       | prompts on the screen ⇄ explicit keys       |

Every channel also feeds the lane's meters (`engine.meters`) and reports the agent's session id.
"""

from __future__ import annotations

from lanes_tui.engine.channels.base import POLL_S, AgentIO, Channel, ChannelContext
from lanes_tui.engine.channels.claude import ClaudeStreamChannel
from lanes_tui.engine.channels.codex import CodexChannel
from lanes_tui.engine.channels.gemini import GeminiChannel
from lanes_tui.engine.channels.plain import PlainChannel
from lanes_tui.engine.channels.pty import PtyChannel

__all__ = ["CHANNEL_TYPES", "POLL_S", "AgentIO", "Channel", "ChannelContext", "make_channel"]

CHANNEL_TYPES: dict[str, type[Channel]] = {
    "plain": PlainChannel,
    "claude-stream-json": ClaudeStreamChannel,
    "codex-json": CodexChannel,
    "gemini-stream-json": GeminiChannel,
    "pty": PtyChannel,
}


def make_channel(ctx: ChannelContext) -> Channel:
    """The channel the provider's `channel` key names (the config loader has validated it)."""
    return CHANNEL_TYPES.get(ctx.provider.channel, PlainChannel)(ctx)
