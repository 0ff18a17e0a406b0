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
#: codex 0.169 prints its API errors as `{"type":"error","message":…}` lines (the codex-json channel
#: reads them first); these are the fallback. Its apostrophe is typographic ("You’ve").
CODEX_BUDGET = (
    r"You['’]ve hit your usage limit",
    r"Quota exceeded\. Check your plan",
    r"workspace is out of credits",
)
#: Not "Model metadata for … not found": codex warns so for a model missing from its list and runs on.
CODEX_CONFIG = (
    r"model is not supported when using Codex",
    r"unexpected status 401 Unauthorized",
    r"unexpected status 403 Forbidden",
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
#: codex: CODEX_HOME (sessions, logs, auth): its default, and where the agent's environment moves it.
CODEX_WRITABLE = ("~/.codex/", "$CODEX_HOME/")
#: gemini: settings, trusted folders, its OAuth cache and checkpoints.
GEMINI_WRITABLE = ("~/.gemini/",)
#: aider: its caches and analytics (its chat history and tags cache live in the worktree).
AIDER_WRITABLE = ("~/.aider/", "~/.cache/aider/")
