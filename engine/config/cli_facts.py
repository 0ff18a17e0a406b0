"""The agent CLIs' behaviour beyond their presets (PROVIDERS.md): how each resumes its own session,
which of its files in the worktree are no change of the lane's, the sandbox of its own that cannot run
under the kernel's fence, the exit codes with a meaning, the prompts of its terminal screen.

Split from `config.providers` (the presets and their rules) along that seam: these are looked up by a
channel or a program name when a lane runs, not merged from the lead's config. A CLI that changes one of
them is still a one-line fix, here.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType

from lanes_tui.engine.config.provider_facts import AIDER_WORKTREE_STATE
from lanes_tui.engine.config.providers import CONFIG_ERROR_EXIT_CODES, ProviderConfig

#: Extra claude arguments to answer permission requests over stdin (structured inbox channel).
CLAUDE_PERMISSION_ARGS = ("--input-format", "stream-json", "--permission-prompt-tool", "stdio")


@dataclass(frozen=True)
class ResumeFact:
    """How a CLI continues its own conversation (`supervisor.resume`; docs/lanes.md, "Resuming").

    `args` (`{session}` is the recorded session / thread id) go into the argv the channel rendered,
    before the element `before` when the argv has it (codex's trailing `-`: `codex exec … resume ID -`),
    else at the end; the new message is the prompt, sent as the preset sends one.
    """

    args: tuple[str, ...]
    before: str | None = None
    #: Output lines (case-insensitive regexes) that say the CLI could not find the session: the run is
    #: repeated once, fresh, instead of failing the lane.
    missing: tuple[str, ...] = ()
    #: Can the CLI find a session made in another worktree of the same repository? A relaunch always
    #: runs in a new worktree: a CLI that keeps sessions per directory starts fresh there.
    across_worktrees: bool = True
    #: The session is this file in the worktree (aider's chat history), not an id the CLI prints: it is
    #: recorded after the run and copied into the next attempt's worktree before the resumed one.
    history_file: str = ""

    def apply(self, argv: list[str], session: str) -> list[str]:
        extra = [part.replace("{session}", session) for part in self.args]
        at = argv.index(self.before) if self.before is not None and self.before in argv[1:] else len(argv)
        return argv[:at] + extra + argv[at:]


#: Resuming, by channel (a channel is one CLI's dialect, so a custom provider that speaks it resumes too).
#: claude finds a session of another worktree of the same repository (Claude Code 2.1.9x and later);
#: codex keeps sessions by id under ~/.codex, wherever it runs; gemini keeps them per project folder.
RESUME_BY_CHANNEL: Mapping[str, ResumeFact] = MappingProxyType({
    "claude-stream-json": ResumeFact(("--resume", "{session}"), missing=(r"No conversation found with session ID",)),
    "codex-json": ResumeFact(("resume", "{session}"), before="-",
                             missing=(r"no rollout found for thread id", r"missing rollout path")),
    # Gemini CLI 0.61 resumes a session id in the folder that made it; elsewhere it exits 42 with this.
    "gemini-stream-json": ResumeFact(("--resume", "{session}"), across_worktrees=False,
                                     missing=(r"Error resuming session",)),
})
#: Resuming, by program, for CLIs read as plain text.
RESUME_BY_PROGRAM: Mapping[str, ResumeFact] = MappingProxyType({
    "aider": ResumeFact(("--restore-chat-history",), history_file=".aider.chat.history.md"),
})


#: Files a CLI keeps in its working folder that are no change of the lane's (`lanes.worktree_ready`).
WORKTREE_STATE_BY_PROGRAM: Mapping[str, tuple[str, ...]] = MappingProxyType({"aider": AIDER_WORKTREE_STATE})


def worktree_state(provider: ProviderConfig) -> tuple[str, ...]:
    """The gitignore patterns of `provider`'s own files in the worktree (aider's `.aider*`), or ()."""
    return WORKTREE_STATE_BY_PROGRAM.get(Path(provider.executable()).name, ())


def resume_fact(provider: ProviderConfig) -> ResumeFact | None:
    """How `provider` resumes its own session, or None when it cannot (sim, an unknown plain CLI)."""
    if provider.channel in RESUME_BY_CHANNEL:
        return RESUME_BY_CHANNEL[provider.channel]
    if provider.channel == "plain":
        return RESUME_BY_PROGRAM.get(Path(provider.executable()).name)
    return None


#: The CLIs' own sandboxes that cannot start under the kernel's fence (`lanes.confine`). Codex's
#: `workspace-write` is bubblewrap, which needs mount(2) and user namespaces; Landlock forbids both, so a
#: confined codex had every write and command refused, and still exited 0. Under the fence the kernel
#: already holds the agent to its worktree, so the CLI's own sandbox is swapped for its "off" mode
#: there (`argv_under_fence`), and kept where a lane runs uncontained. The lead's config may still
#: never name the off mode (`FORBIDDEN_ARGS`): only lanes-tui swaps it in, and only under the fence.
SANDBOX_UNDER_FENCE: Mapping[str, tuple[tuple[str, ...], tuple[str, ...]]] = MappingProxyType({
    "codex-json": (("-s", "workspace-write"), ("-s", "danger-full-access")),
})


def argv_under_fence(channel: str, argv: list[str], *, contained: bool) -> list[str]:
    """`argv` with the CLI's own sandbox swapped for its off mode when the kernel's fence contains it."""
    swap = SANDBOX_UNDER_FENCE.get(channel)
    if not contained or swap is None:
        return argv
    own, off = swap
    for at in range(len(argv) - len(own) + 1):
        if tuple(argv[at:at + len(own)]) == own:
            return [*argv[:at], *off, *argv[at + len(own):]]
    return argv


#: Gemini exit codes with a meaning beyond success / failure (Gemini CLI 0.61). 41 and 55 are config errors
#: (`GEMINI_CONFIG_EXIT_CODES`); each is printed with a message that `GEMINI_CONFIG` and the channel read.
#: An API error ends the run with the HTTP status modulo 256 (400 → 144, 403 → 147, 429 → 173,
#: 500 → 244, 503 → 247): the `result` line's error says which.
GEMINI_EXIT_CODES: Mapping[int, str] = MappingProxyType({
    41: "no usable authentication", 42: "bad input", 52: "bad configuration", 53: "turn limit reached",
    55: "the folder is not trusted",
})
GEMINI_CONFIG_EXIT_CODES = (41, 52, 55)
#: Exit codes that mean "this provider is not usable here", by channel, besides 127 (`config_exit_codes`).
CONFIG_EXIT_CODES_BY_CHANNEL: Mapping[str, tuple[int, ...]] = MappingProxyType({
    "gemini-stream-json": GEMINI_CONFIG_EXIT_CODES,
})


#: What an exit code means, by channel (`exit_meaning`).
EXIT_MEANINGS_BY_CHANNEL: Mapping[str, Mapping[int, str]] = MappingProxyType({
    "gemini-stream-json": GEMINI_EXIT_CODES,
})


def exit_meaning(provider: ProviderConfig | None, code: int) -> str:
    """What exit `code` means for `provider`'s CLI, or "" when it is not a documented one."""
    if code == 127:
        return "command not found"
    return EXIT_MEANINGS_BY_CHANNEL.get(provider.channel, {}).get(code, "") if provider is not None else ""


def config_exit_codes(provider: ProviderConfig | None) -> tuple[int, ...]:
    """The exit codes that end a run of `provider` CONFIG-ERROR (127 for every one: command not found)."""
    own = CONFIG_EXIT_CODES_BY_CHANNEL.get(provider.channel, ()) if provider is not None else ()
    return (*CONFIG_ERROR_EXIT_CODES, *own)

#: Terminal-screen fallback: lines that mean the agent waits for the lead (case-insensitive regexes).
SCREEN_PROMPTS: Mapping[str, tuple[str, ...]] = MappingProxyType({
    "claude": (r"Do you want .*", r"No, and tell Claude what to do differently", r"esc to cancel"),
    "codex": (r"Press enter to confirm or esc to cancel", r"Yes, proceed \(y\)", r"Allow command\?"),
    "gemini": (r"Allow once", r"Waiting for user confirmation", r"│ Apply this change"),
    "aider": (r"\(Y\)es/\(N\)o",),
})

#: Terminal-screen fallback: lines that mean the agent is busy, so a prompt-like line is not a prompt.
SCREEN_BUSY: Mapping[str, tuple[str, ...]] = MappingProxyType({
    "claude": (r"esc to interrupt", r"\(.*tokens\)"),
    "gemini": (r"esc to cancel",),
})
