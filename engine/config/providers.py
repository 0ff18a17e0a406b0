"""Every fact about the agent CLIs (PROVIDERS.md) in one place, as data.

The CLIs cannot log in on our machines, so their formats are only ever checked against fakes; when
a real CLI changes a flag or an error line, the fix must be one line here and nowhere else. The
config loader merges the lead's `[providers.NAME]` tables onto these presets.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType

from lanes_tui.engine.config.provider_facts import (
    AIDER_BUDGET,
    AIDER_CONFIG,
    AIDER_ENV,
    AIDER_RETRY,
    AIDER_WRITABLE,
    CLAUDE_BUDGET,
    CLAUDE_CONFIG,
    CLAUDE_ENV,
    CLAUDE_RETRY,
    CLAUDE_WRITABLE,
    CODEX_BUDGET,
    CODEX_CONFIG,
    CODEX_ENV,
    CODEX_RETRY,
    CODEX_WRITABLE,
    GEMINI_BUDGET,
    GEMINI_CONFIG,
    GEMINI_ENV,
    GEMINI_RETRY,
    GEMINI_WRITABLE,
    SIM_BUDGET,
    SIM_CONFIG,
    SIM_RETRY,
)

#: How a provider's output is read: plain text, one of three JSON-lines dialects, or a terminal screen.
CHANNELS = ("plain", "claude-stream-json", "codex-json", "gemini-stream-json", "pty")
#: How the prompt reaches the agent: written to its stdin, or given as a command-line argument.
PROMPT_MODES = ("stdin", "arg")
#: The only `{name}` placeholders an argv template may use; anything else is a typo we refuse.
PLACEHOLDERS = ("model", "effort", "worktree", "prompt", "python")
#: A `{identifier}` in an argv element. Braces around anything else (JSON, say) are left alone.
PLACEHOLDER_RE = re.compile(r"\{([A-Za-z_][A-Za-z0-9_]*)\}")
#: Exit codes that mean "this provider is not usable here" (127: command not found).
CONFIG_ERROR_EXIT_CODES = (127,)
#: Substrings no argv may contain: codex must stay confined to the worktree (PROVIDERS.md).
FORBIDDEN_ARGS = ("danger-full-access", "dangerously-bypass-approvals-and-sandbox")
DEFAULT_MAX = 2
#: An `env` entry: an exact environment name, or a prefix (at least one character) ending in `*`.
ENV_PATTERN_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*\*?$")
#: Variables an agent CLI sets in the session it runs commands in, to tell a nested process where it
#: is. If the lead starts lanes-tui from inside such a session, an agent must not inherit them: a
#: nested claude that sees `CLAUDECODE` believes it runs inside the lead's session (and may refuse to
#: start, or report to the lead's IDE port), a codex that sees `CODEX_SANDBOX` believes it is already
#: sandboxed. Dropped even for the provider whose own prefix (`CLAUDE_*`, `CODEX_*`) would match them.
HOST_SESSION_VARS = (
    "CLAUDECODE", "CLAUDE_CODE_SESSION_ID", "CLAUDE_CODE_ENTRYPOINT", "CLAUDE_CODE_SSE_PORT",
    "CLAUDE_AGENT_SDK_VERSION", "CODEX_SANDBOX", "CODEX_SANDBOX_NETWORK_DISABLED", "GEMINI_CLI",
)


@dataclass(frozen=True)
class ProviderConfig:
    """One agent CLI as a lane runs it: a preset, possibly with the lead's overrides merged on top."""

    name: str
    argv: tuple[str, ...]
    prompt: str  # "stdin" | "arg"
    model: str
    effort: str
    max: int
    channel: str
    budget_patterns: tuple[str, ...]
    config_patterns: tuple[str, ...]
    #: Lines meaning "rate limited / overloaded, try again later" (the text fallback of a structured
    #: error): the supervisor retries the same provider in the lane with back-off, then moves on.
    retry_patterns: tuple[str, ...] = ()
    #: Environment variables the agent receives besides the base set (`lanes.env`): its own
    #: credentials and settings, as exact names or `PREFIX_*`; the lead's `env` is added to the preset's.
    env: tuple[str, ...] = ()
    #: What the agent may write besides its worktree, its git admin folder and its TMPDIR
    #: (`lanes.confine`): its own state, `~/` for its HOME, a trailing `/` for a folder.
    writable: tuple[str, ...] = ()
    #: The model family (`anthropic`, `openai`, `google`, `sim`, …): a reviewer must come from another
    #: family than the lane's writers. "" derives it from `model` (see `provider_family`).
    family: str = ""
    #: The model's context window in tokens for the context meter (`state.context`); 0: what the CLI
    #: reports, else the model family's window.
    context_window: int = 0
    #: Flag the lane from this fraction of the window; 0: `[lanes] context_warn`.
    context_warn: float = 0.0

    def render_argv(self, prompt_text: str, worktree: Path) -> list[str]:
        """The argv to exec (never through a shell): placeholders filled element by element.

        Substitution is a single pass, so a prompt that itself contains `{model}` stays verbatim.
        In "arg" mode the prompt is appended as the last argument unless the template places it.
        """
        values = {
            "model": self.model,
            "effort": self.effort,
            "worktree": str(worktree),
            "prompt": prompt_text,
            "python": sys.executable,
        }
        argv = [_fill(part, values) for part in self.argv]
        if self.prompt == "arg" and not self.uses_placeholder("prompt"):
            argv.append(prompt_text)
        return argv

    def executable(self) -> str:
        """The program to look up on PATH (for `doctor`): argv[0] with `{python}` and friends filled."""
        values = {"model": self.model, "effort": self.effort, "python": sys.executable}
        return _fill(self.argv[0], values) if self.argv else ""

    def uses_placeholder(self, name: str) -> bool:
        return any(name in placeholders_in(part) for part in self.argv)

    def budget_match(self, text: str) -> str | None:
        """The first budget pattern found in `text` (OUT-OF-BUDGET: try the next provider), or None."""
        return _first_match(self.budget_patterns, text)

    def config_match(self, text: str) -> str | None:
        """The first config-error pattern found in `text` (CONFIG-ERROR: stop the chain), or None."""
        return _first_match(self.config_patterns, text)


def placeholders_in(part: str) -> list[str]:
    """The placeholder names used in one argv element, known or not."""
    return PLACEHOLDER_RE.findall(part)


def forbidden_arg(part: str) -> tuple[str, str] | None:
    """(what, fix) if an argv element would let the agent write outside its worktree, else None."""
    if any(bad in part for bad in FORBIDDEN_ARGS):
        return (f"{part!r} would let the agent write outside its worktree",
                "use -s workspace-write with -C {worktree}")
    return None


def env_pattern_problem(pattern: str) -> tuple[str, str] | None:
    """(what, fix) if `pattern` is not an environment name or a `PREFIX_*`, or names what never passes."""
    if not ENV_PATTERN_RE.match(pattern):
        return (f"{pattern!r} is not an environment variable name or a PREFIX_* pattern",
                'write exact names or a prefix ending in one *, e.g. env = ["MY_TOOL_HOME", "MY_TOOL_*"]')
    if pattern.startswith("LANES_") or pattern in HOST_SESSION_VARS:
        return (f"{pattern!r} never reaches an agent (lanes-tui's own or the lead's session)",
                "remove it; a lane gets LANES_LANE, LANES_ATTEMPT, LANES_HOME and LANES_WORKTREE by itself")
    return None


def env_matches(name: str, patterns: tuple[str, ...] | list[str]) -> bool:
    """True if `name` equals a pattern or starts with the part of a `PREFIX_*` before its `*`.

    Case-sensitive on purpose: environment names are, and `path` must not smuggle in `PATH`'s twin.
    """
    return any(name.startswith(p[:-1]) if p.endswith("*") else name == p for p in patterns)


def compile_pattern(pattern: str) -> re.Pattern[str]:
    """Patterns are matched case-insensitively against output lines; raises re.error if malformed."""
    return re.compile(pattern, re.IGNORECASE)


def _first_match(patterns: tuple[str, ...], text: str) -> str | None:
    for pattern in patterns:
        if compile_pattern(pattern).search(text):
            return pattern
    return None


def _fill(part: str, values: Mapping[str, str]) -> str:
    return PLACEHOLDER_RE.sub(lambda m: values.get(m.group(1), m.group(0)), part)


# --- The presets -----------------------------------------------------------------------------------

PRESETS: Mapping[str, ProviderConfig] = MappingProxyType({
    "claude": ProviderConfig(
        name="claude",
        # --verbose is required with stream-json in -p mode.
        argv=("claude", "-p", "--output-format", "stream-json", "--verbose",
              "--permission-mode", "acceptEdits", "--model", "{model}"),
        prompt="stdin",
        model="sonnet",
        effort="",
        max=DEFAULT_MAX,
        channel="claude-stream-json",
        budget_patterns=CLAUDE_BUDGET,
        config_patterns=CLAUDE_CONFIG,
        retry_patterns=CLAUDE_RETRY,
        env=CLAUDE_ENV,
        writable=CLAUDE_WRITABLE,
        family="anthropic",
    ),
    "codex": ProviderConfig(
        name="codex",
        # workspace-write confined to the worktree with -C; never danger-full-access.
        argv=("codex", "exec", "--json", "-m", "{model}", "-c", "model_reasoning_effort={effort}",
              "-s", "workspace-write", "-C", "{worktree}", "--skip-git-repo-check", "-"),
        prompt="stdin",
        # In codex 0.169's model list with the classic tools (gpt-6.x are "code mode only"); a model
        # missing from the list makes codex warn and fall back to generic metadata.
        model="gpt-5.5",
        effort="medium",
        max=DEFAULT_MAX,
        channel="codex-json",
        budget_patterns=CODEX_BUDGET,
        config_patterns=CODEX_CONFIG,
        retry_patterns=CODEX_RETRY,
        env=CODEX_ENV,
        writable=CODEX_WRITABLE,
        family="openai",
    ),
    "gemini": ProviderConfig(
        name="gemini",
        # Headless, every lane is a new folder: `--skip-trust` or gemini exits 55. Without an approval
        # mode it is offered read-only tools; `auto_edit` still withholds its shell (no tests run), so
        # `yolo` — the kernel's fence (`lanes.confine`) keeps its writes in the worktree.
        argv=("gemini", "-p", "{prompt}", "--output-format", "stream-json", "-m", "{model}",
              "--skip-trust", "--approval-mode", "yolo"),
        prompt="arg",
        model="gemini-2.5-pro",
        effort="",
        max=DEFAULT_MAX,
        channel="gemini-stream-json",
        budget_patterns=GEMINI_BUDGET,
        config_patterns=GEMINI_CONFIG,
        retry_patterns=GEMINI_RETRY,
        env=GEMINI_ENV,
        writable=GEMINI_WRITABLE,
        family="google",
    ),
    "aider": ProviderConfig(
        name="aider",
        # No JSON output. The model is aider's own choice (--model, AIDER_MODEL, .aider.conf.yml; see
        # config.aider_model) unless the lead sets one; --no-gitignore: never add `.aider*` to .gitignore.
        argv=("aider", "--yes-always", "--no-auto-commits", "--no-gitignore", "--message", "{prompt}"),
        prompt="arg",
        model="",
        effort="",
        max=DEFAULT_MAX,
        channel="plain",
        budget_patterns=AIDER_BUDGET,
        config_patterns=AIDER_CONFIG,
        retry_patterns=AIDER_RETRY,
        env=AIDER_ENV,
        writable=AIDER_WRITABLE,
        family="",  # the family of its model: provider_family derives it
    ),
    "sim": ProviderConfig(
        name="sim",
        argv=("{python}", "-m", "lanes_tui.engine.sim"),
        prompt="stdin",
        model="sim",
        effort="",
        max=100,
        channel="plain",
        budget_patterns=SIM_BUDGET,
        config_patterns=SIM_CONFIG,
        retry_patterns=SIM_RETRY,
        family="sim",
    ),
})


#: The `[providers]` part of the default config, as comment lines: what each key of a preset means.
PROVIDERS_HELP = (
    "[providers.NAME] overrides a preset key by key, or adds an agent CLI (argv required).",
    "Presets: " + "; ".join(f"{p.name} model " + (repr(p.model) if p.model else "its own (AIDER_MODEL, …)")
                            + (f" effort {p.effort!r}" if p.effort else "")
                            for p in PRESETS.values()) + ".",
    "  argv = [...]        placeholders: " + " ".join(f"{{{name}}}" for name in PLACEHOLDERS),
    '  prompt = "stdin"    or "arg": the prompt becomes the last argument (or replaces {prompt})',
    "  model, effort       strings filled into argv",
    f"  max = {DEFAULT_MAX}             lanes of this provider at once",
    f'  channel = "plain"   {" | ".join(CHANNELS)}',
    "  budget_patterns     regexes (case-insensitive): OUT-OF-BUDGET, the chain moves on",
    "  config_patterns     regexes: CONFIG-ERROR, the chain stops",
    "  retry_patterns      regexes: rate limited / overloaded: retried in the lane with back-off, then the",
    "                      chain moves on (structured errors of the JSON channels need none)",
    '  env = ["NAME", "PREFIX_*"]  environment variables the agent gets besides the base set and',
    "                      the preset's own credentials (docs/providers.md); everything else is dropped",
    '  family = "openai"   the model family, for [review] (default: the preset\'s, or derived from model)',
    "  context_window = N  the model's context window in tokens (default: what the CLI reports, else",
    "                      the model family's); context_warn = 0.85 flags the lane from 85 % full",
    "Example:",
    "[providers.codex]",
    'effort = "high"',
    "",
    'The optional [keys] table remaps the dashboard\'s keys: binding = "key", e.g.',
    "[keys]",
    'accept = "A"',
)
