"""The agent CLIs' error lines, credentials and own state, as data (PROVIDERS.md): what the presets in
`config.providers` are made of, kept apart so that module stays the presets and their rules. When a
real CLI changes an error line, a variable or where it keeps its state, the fix is one line here.
"""

from __future__ import annotations

# --- Out-of-budget and config-error lines (PROVIDERS.md), case-insensitive regexes -----------------

#: Claude itself and claude-compatible gateways (e.g. GLM) that speak its CLI.
CLAUDE_BUDGET = (
    r'API Error: 429.*"type"\s*:\s*"(?:1113|1308|1309|1310|1316|1317)"',
    r"Insufficient balance or no resource package",
    r"Usage limit reached for",
    r"Limit Exhausted",
)
CLAUDE_CONFIG = (
    r"API Error: 400 \[1211\]",
    r"Unknown Model, please check the model code",
    r"no API key for provider",
)
CODEX_BUDGET = (
    r"You've hit your usage limit",
    r"Quota exceeded\. Check your plan",
    r"workspace is out of credits",
)
CODEX_CONFIG = (
    r"model is not supported when using Codex",
    r"Model metadata for .* not found",
)
GEMINI_BUDGET = (
    r"RESOURCE_EXHAUSTED.*quota",
    r"Individual quota reached",
)
GEMINI_CONFIG = (
    r"invalid model selection",
    r"is not recognized as a known model",
)
SIM_BUDGET = (r"SIM-OUT-OF-BUDGET",)
SIM_CONFIG = (r"SIM-CONFIG-ERROR",)

# --- Rate-limit and overload lines: the text fallback when a CLI gives up without a structured error --
#: Each matched line, on a non-zero exit (or an exit 0 that changed nothing), means "try the same provider
#: again later": the supervisor backs off (`RETRY_BACKOFF_S`) and retries it in the lane. A CLI that
#: retries by itself and then succeeds is not affected: its exit 0 with work done is OK.
CLAUDE_RETRY: tuple[str, ...] = ()
CODEX_RETRY: tuple[str, ...] = ()
GEMINI_RETRY: tuple[str, ...] = ()
AIDER_RETRY: tuple[str, ...] = ()
SIM_RETRY = (r"SIM-RATE-LIMITED",)

#: Seconds the supervisor waits before each retry of a rate-limited / overloaded provider in the lane;
#: past the last, the chain moves on to the next provider (a `fallback` event).
RETRY_BACKOFF_S = (30.0, 120.0, 300.0)

#: Files (top-level names, globs) the CLIs write for themselves in the worktree: never the agent's work,
#: so a run that left only these changed nothing (NO-CHANGES). aider's chat and input history, tags cache.
AGENT_OWN_FILES = (".aider*",)

# --- What fixes a refused credential (CONFIG-ERROR "auth"; `doctor` says the same) ---------------------
#: By preset name, else by the program's name (a custom provider running `claude` gets claude's fix).
AUTH_FIX = {
    "claude": "set ANTHROPIC_API_KEY (or run `claude /login`)",
    "codex": "set OPENAI_API_KEY (or run `codex login`)",
    "gemini": "set GEMINI_API_KEY (or GOOGLE_API_KEY; or run `gemini` once to log in)",
}
#: aider (and any CLI that runs whichever model it is given): the key of its model's family.
KEY_BY_FAMILY = {"anthropic": "ANTHROPIC_API_KEY", "openai": "OPENAI_API_KEY", "google": "GEMINI_API_KEY"}
#: The other refusals, by `ProviderError.kind`: `{name}` is the provider, `{model}` its model.
ERROR_FIX = {
    "forbidden": "the key may not use model {model!r}: choose another `model` in [providers.{name}] or another key",
    "model": "{name} does not know model {model!r}: set `model` in [providers.{name}]",
    "trust": "{name} refuses the lane's folder as untrusted: let it trust the worktree (docs/providers.md)",
}


# --- Each CLI's own credentials and settings (what `env` adds to the base set) ----------------------

#: claude: the API key (or a gateway's token and base URL) and Claude Code's own settings
#: (CLAUDE_CONFIG_DIR, CLAUDE_CODE_USE_BEDROCK, …); never the session markers above.
CLAUDE_ENV = ("ANTHROPIC_*", "CLAUDE_*")
#: codex: the OpenAI key, base URL and organisation, and CODEX_HOME.
CODEX_ENV = ("OPENAI_*", "CODEX_*")
#: gemini: its key, or Vertex AI's project, location and service-account file. Not every GOOGLE_*:
#: that prefix is shared by all of Google's tools (an OAuth client secret of the lead's own app).
GEMINI_ENV = ("GEMINI_*", "GOOGLE_API_KEY", "GOOGLE_CLOUD_*", "GOOGLE_GENAI_*", "GOOGLE_APPLICATION_CREDENTIALS")
#: aider: the keys of the models it is usually run with, and its own AIDER_* settings; add others
#: (DEEPSEEK_API_KEY, OPENROUTER_API_KEY, …) with `[providers.aider] env`.
AIDER_ENV = ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "AIDER_*")

# --- Each CLI's own state (what `writable` adds to the worktree, its admin folder and its TMPDIR) ----
#: claude: its settings, sessions and credentials folder, and the one state file it keeps in HOME.
CLAUDE_WRITABLE = ("~/.claude/", "~/.claude.json", "~/.config/claude/")
#: codex: CODEX_HOME's default (sessions, logs, auth).
CODEX_WRITABLE = ("~/.codex/",)
#: gemini: settings, trusted folders, its OAuth cache and checkpoints.
GEMINI_WRITABLE = ("~/.gemini/",)
#: aider: its caches and analytics (its chat history and tags cache live in the worktree).
AIDER_WRITABLE = ("~/.aider/", "~/.cache/aider/")
