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
    # Gemini CLI 0.61's TerminalQuotaError (a daily quota, or no billing): it does not retry it.
    r"exhausted your daily quota",
)
GEMINI_CONFIG = (
    r"invalid model selection",
    r"is not recognized as a known model",
    # Gemini CLI 0.61 headless (docs/providers.md, "Gemini"): exit 55, a folder it does not trust;
    r"not running in a trusted directory",
    # exit 41, no usable auth type (with GOOGLE_GEMINI_BASE_URL alone it picks `gateway`, refused headless);
    r"Invalid auth method selected",
    r"Please set an Auth method in your",
    r"must specify the GEMINI_API_KEY environment variable",
    r"When using Vertex AI, you must specify",
    # the API refused the key or its permissions (400 API_KEY_INVALID, 401, 403 on its stderr).
    r"API key not valid\. Please pass a valid API key",
    r'"status":\s*"(?:PERMISSION_DENIED|UNAUTHENTICATED)"',
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
#: Also the documented endpoints (a gateway or proxy: GOOGLE_GEMINI_BASE_URL, GOOGLE_VERTEX_BASE_URL);
#: GEMINI_* already carries its settings, telemetry (GEMINI_TELEMETRY_*), GEMINI_CLI_HOME,
#: GEMINI_CLI_TRUST_WORKSPACE, GEMINI_DEFAULT_AUTH_TYPE and GEMINI_API_KEY_AUTH_MECHANISM.
GEMINI_ENV = ("GEMINI_*", "GOOGLE_API_KEY", "GOOGLE_CLOUD_*", "GOOGLE_GENAI_*", "GOOGLE_APPLICATION_CREDENTIALS",
              "GOOGLE_GEMINI_BASE_URL", "GOOGLE_VERTEX_BASE_URL")
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
