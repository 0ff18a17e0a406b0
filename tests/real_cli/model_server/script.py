"""What the scripted model says, independent of the API it is said in.

A script is the list of steps of one agent run. The step a request gets is derived from the request
itself, not from a counter: the number of tool results already in the conversation it carries. So
a CLI's retries, its auxiliary calls (titles, token counts, "next speaker" checks) and a resumed session
all land on the right step, and every dialect (`anthropic`, `openai_responses`, `openai_chat`, `gemini`)
turns the same step into its own wire format.

Failures are a prefix: `Script.fail` answers the first `fail.times` main requests (None: all of them)
with an error of its kind before the steps begin; `Script.hang` accepts every main request and never
answers, which a lane must see as a stall.
"""

from __future__ import annotations

from dataclasses import dataclass, field

#: The error modes of the issue, each as the providers' APIs send it (the dialects map them).
FAIL_KINDS = ("billing", "auth", "forbidden", "rate_limit", "usage_limit", "overloaded", "server")


@dataclass(frozen=True)
class Say:
    """Final assistant text: the turn ends here (with the script's usage)."""

    text: str


@dataclass(frozen=True)
class WriteFile:
    """A tool call that writes `content` to `path` (relative to the agent's working folder)."""

    path: str
    content: str


@dataclass(frozen=True)
class RunCommand:
    """A tool call that runs a shell command (Claude: a permission request the lead answers)."""

    command: str


Step = Say | WriteFile | RunCommand


@dataclass(frozen=True)
class Fail:
    """Answer main requests with an error of `kind` (FAIL_KINDS); `times` None means every one.

    `reset_s`: for `usage_limit`, seconds from now until the quota resets (said in the provider's way).
    """

    kind: str
    times: int | None = None
    reset_s: int = 3600

    def __post_init__(self) -> None:
        if self.kind not in FAIL_KINDS:
            raise ValueError(f"unknown failure kind {self.kind!r}: one of {', '.join(FAIL_KINDS)}")


@dataclass(frozen=True)
class Usage:
    input_tokens: int = 1200
    output_tokens: int = 80
    cached_input_tokens: int = 0
    #: Part of `input_tokens` written to the prompt cache (OpenAI: `input_tokens_details.cache_write_tokens`).
    cache_write_tokens: int = 0
    #: Part of `output_tokens` spent reasoning (OpenAI: `output_tokens_details.reasoning_tokens`).
    reasoning_tokens: int = 0


@dataclass(frozen=True)
class Script:
    steps: tuple[Step, ...] = (Say("done"),)
    fail: Fail | None = None
    hang: bool = False
    usage: Usage = field(default_factory=Usage)

    def step(self, tool_results: int) -> Step:
        """The step for a conversation that already holds `tool_results` results (the last step repeats)."""
        return self.steps[min(tool_results, len(self.steps) - 1)]
