"""Fake agent CLIs (real executable scripts, standard library only) and config tables that run them.

Each fake prints its CLI's formats byte for byte as PROVIDERS.md / INBOX.md describe, so the channels
are tested against real processes without a login to any real CLI.
"""

from __future__ import annotations

import json
from pathlib import Path

HERE = Path(__file__).resolve().parent
FAKE_CLAUDE = HERE / "fake_claude.py"
FAKE_CODEX = HERE / "fake_codex.py"
FAKE_AIDER = HERE / "fake_aider.py"

#: What the fakes report, for assertions.
CLAUDE_SESSION = "5f1e2d3c-0000-4000-8000-fakeclaude01"
CLAUDE_REQUEST_ID = "req_fake_0001"
CODEX_THREAD = "0199a213-81c0-7800-8aa1-bbab2a035a53"


def provider_table(name: str, script: Path, *args: str, channel: str, prompt: str = "stdin",
                   model: str = "", extra: str = "") -> str:
    """A `[providers.NAME]` table that runs `script` with the test's Python."""
    argv = json.dumps(["{python}", str(script), *args])
    text = f'[providers.{name}]\nargv = {argv}\nchannel = "{channel}"\nprompt = "{prompt}"\n'
    if model:
        text += f'model = "{model}"\n'
    return text + extra + "\n"


CLAUDE_TABLE = provider_table("fakeclaude", FAKE_CLAUDE, "-p", "--output-format", "stream-json", "--verbose",
                              channel="claude-stream-json", model="sonnet")
CODEX_TABLE = provider_table("fakecodex", FAKE_CODEX, "exec", "--json", "-m", "{model}", "-",
                             channel="codex-json", model="gpt-5-codex")
