"""Channels: how the supervisor reads a provider's output and talks back to it, by the `channel` key.

| channel              | output                         | questions and answers                       |
|----------------------|--------------------------------|---------------------------------------------|
| `plain`              | text (aider's cost line read)  | only through `lanes-tui ask`                |
| `claude-stream-json` | Claude's stream-json           | `control_request` ⇄ `control_response`      |
| `codex-json`         | `codex exec --json` events     | only through `lanes-tui ask`                |
| `gemini-stream-json` | Gemini's stream-json           | only through `lanes-tui ask`                |
| `pty`                | a terminal screen (pyte)       | prompts on the screen ⇄ explicit keys       |

Every channel also feeds the lane's meters (`state.meters`) and reports the agent's session id.

Owns: `base` (the Channel interface and the agent's I/O), one module per channel above (and
`gemini_errors`, Gemini CLI's error shapes, pure, read by the gemini channel), `screen`
and `pty_process` (the terminal a `pty` channel reads, its repaint and its viewers' copy of the bytes),
`transcript` (a structured lane's conversation as turns, for attach and the conversation view),
`readable` with `readable_dialects` and `readable_parts` (claude, codex and gemini output lines as
readable lines, for the Output pane and `peek`; no channel loads them).
Never textual or rich; `pyte` only in the terminal modules, which only a `pty` lane loads.
Its place in the layers: pyproject's `[tool.importlinter]` contracts (docs/layout.md).
"""

from __future__ import annotations

import importlib

from lanes_tui.engine.channels.base import POLL_S, AgentIO, Channel, ChannelContext

__all__ = ["CHANNEL_MODULES", "POLL_S", "AgentIO", "Channel", "ChannelContext", "channel_class", "make_channel"]

#: channel key -> (module under this package, class). A supervisor imports only the module of the
#: channel its provider uses: a plain lane never loads the Claude protocol or pyte's terminal.
CHANNEL_MODULES: dict[str, tuple[str, str]] = {
    "plain": ("plain", "PlainChannel"),
    "claude-stream-json": ("claude", "ClaudeStreamChannel"),
    "codex-json": ("codex", "CodexChannel"),
    "gemini-stream-json": ("gemini", "GeminiChannel"),
    "pty": ("pty", "PtyChannel"),
}


def channel_class(name: str) -> type[Channel]:
    """The channel class for a `channel` key, imported on first use (plain for an unknown key)."""
    module, cls = CHANNEL_MODULES.get(name, CHANNEL_MODULES["plain"])
    found: type[Channel] = getattr(importlib.import_module(f"{__name__}.{module}"), cls)
    return found


def make_channel(ctx: ChannelContext) -> Channel:
    """The channel the provider's `channel` key names (the config loader has validated it)."""
    return channel_class(ctx.provider.channel)(ctx)
