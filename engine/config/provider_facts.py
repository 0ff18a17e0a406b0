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
    # Claude Code 2.1.328 itself (the fallback: its channel reads the structured `error` field first).
    r"Credit balance is too low",
    r"You've hit your (?:[\w-]+ )?limit",
)
CLAUDE_CONFIG = (
    r"API Error: 400 \[1211\]",
    r"Unknown Model, please check the model code",
    r"no API key for provider",
    r"Invalid API key · Fix external API key",
    r"Failed to authenticate\. API Error: 40[13]\b",
)
#: Claude Code 2.1.328's lines after its own retries ran out on a rate limit, an overload or a 5xx: the
#: text fallback of a retry in the lane (its channel reads `api_error_status` first).
CLAUDE_RETRY_LINES = (
    r"API Error: Request rejected \(429\)",
    r"API Error: 529 Overloaded",
    r"API Error: 5\d\d\b",
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


# --- Each CLI's own credentials and settings (what `env` adds to the base set) ----------------------

#: claude: the API key (or a gateway's token and base URL) and Claude Code's own settings
#: (CLAUDE_CONFIG_DIR, CLAUDE_CODE_USE_BEDROCK, CLAUDE_CODE_MAX_RETRIES, …); never the session markers
#: above; and the variables it documents without its prefix: telemetry, error reports and updates off,
#: the API's and its tools' timeouts, prompt caching, thinking tokens.
CLAUDE_ENV = ("ANTHROPIC_*", "CLAUDE_*", "DISABLE_TELEMETRY", "DISABLE_AUTOUPDATER", "DISABLE_ERROR_REPORTING",
              "DISABLE_BUG_COMMAND", "DISABLE_COST_WARNINGS", "DISABLE_PROMPT_CACHING*", "DO_NOT_TRACK",
              "API_TIMEOUT_MS", "API_FORCE_IDLE_TIMEOUT", "BASH_DEFAULT_TIMEOUT_MS", "BASH_MAX_TIMEOUT_MS",
              "MCP_TIMEOUT", "MAX_THINKING_TOKENS")
#: codex: the OpenAI key, base URL and organisation, and CODEX_HOME.
CODEX_ENV = ("OPENAI_*", "CODEX_*")
#: gemini: its key, or Vertex AI's project, location and service-account file. Not every GOOGLE_*:
#: that prefix is shared by all of Google's tools (an OAuth client secret of the lead's own app).
GEMINI_ENV = ("GEMINI_*", "GOOGLE_API_KEY", "GOOGLE_CLOUD_*", "GOOGLE_GENAI_*", "GOOGLE_APPLICATION_CREDENTIALS")
#: aider: the keys of the models it is usually run with, and its own AIDER_* settings; add others
#: (DEEPSEEK_API_KEY, OPENROUTER_API_KEY, …) with `[providers.aider] env`.
AIDER_ENV = ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "AIDER_*")

# --- Each CLI's own state (what `writable` adds to the worktree, its admin folder and its TMPDIR) ----
#: claude: its settings, sessions and credentials folder, and the one state file it keeps in HOME; all of
#: it in CLAUDE_CONFIG_DIR instead when the lead sets that (`lanes.confine.provider_writable`).
CLAUDE_WRITABLE = ("~/.claude/", "~/.claude.json", "~/.config/claude/", "$CLAUDE_CONFIG_DIR/")
#: codex: CODEX_HOME's default (sessions, logs, auth).
CODEX_WRITABLE = ("~/.codex/",)
#: gemini: settings, trusted folders, its OAuth cache and checkpoints.
GEMINI_WRITABLE = ("~/.gemini/",)
#: aider: its caches and analytics (its chat history and tags cache live in the worktree).
AIDER_WRITABLE = ("~/.aider/", "~/.cache/aider/")
