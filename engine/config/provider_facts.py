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
#: aider (0.86) prints litellm's exception and its own advice, wrapped at 80 columns by rich when its
#: output is not a terminal: words are joined by `\s+` so a line break between them still matches.
#: OpenAI's `insufficient_quota` 429 is a `RateLimitError` that aider retries for about a minute, then it
#: exits 0: the quota words decide, never aider's "check your quotas" advice printed for every 429.
AIDER_BUDGET = (
    r"exceeded\s+your\s+current\s+quota",
    r"Insufficient\s+credits\s+with\s+the\s+API\s+provider",
    r"credit\s+balance\s+is\s+too\s+low",
)
#: aider's auth error (`litellm.AuthenticationError`, a 401), a key that may not use the model (403),
#: an unknown model (`litellm.NotFoundError`), and the crash when it cannot write the git identity it
#: lacks (`user.name`/`user.email`) into the repository's shared config, which a lane's fence refuses.
AIDER_CONFIG = (
    r"litellm\.AuthenticationError",
    r"litellm\.PermissionDeniedError",
    r"litellm\.NotFoundError",
    r"not\s+allowed\s+to\s+sample\s+from\s+this\s+model",
    r"does\s+not\s+have\s+access\s+to\s+model",
    r"Country,\s+region,\s+or\s+territory\s+not\s+supported",
    r"Permission denied: '[^']*config\.lock'",
)
#: aider retrying by itself (rate limit, overload, 5xx, a timeout): litellm's retryable errors, then
#: `Retrying in 0.2 seconds...` with the delay doubling up to 32 s (about a minute in all), then it gives
#: up and exits 0. While it waits it prints nothing: silence until then is not a stall.
AIDER_RETRY = (
    r"Retrying in [0-9.]+ seconds",
    r"litellm\.RateLimitError",
    r"The API provider has rate limited you",
    r"litellm\.(?:InternalServerError|ServiceUnavailableError|BadGatewayError|APIConnectionError|Timeout)",
    r"The API provider's servers are down or overloaded",
)
SIM_BUDGET = (r"SIM-OUT-OF-BUDGET",)
SIM_CONFIG = (r"SIM-CONFIG-ERROR",)

# --- Rate-limit and overload lines: the text fallback when a CLI gives up without a structured error --
#: Each matched line, on a non-zero exit (or an exit 0 that changed nothing), means "try the same provider
#: again later": the supervisor backs off (`RETRY_BACKOFF_S`) and retries it in the lane. A CLI that
#: retries by itself and then succeeds is not affected: its exit 0 with work done is OK.
CLAUDE_RETRY: tuple[str, ...] = CLAUDE_RETRY_LINES
#: codex retries 5xx by itself ("Reconnecting… n/N", read by its channel) and reports what is left as a
#: structured error: no text fallback is needed.
CODEX_RETRY: tuple[str, ...] = ()
#: Gemini CLI 0.61 retries 429s and 5xx by itself (`general.maxAttempts`, 10 by default) and then says
#: so; its `result` line names the error first (the gemini channel), this is the fallback.
GEMINI_RETRY: tuple[str, ...] = (r"Max attempts reached",)
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
#: Also the documented endpoints (a gateway or proxy: GOOGLE_GEMINI_BASE_URL, GOOGLE_VERTEX_BASE_URL);
#: GEMINI_* already carries its settings, telemetry (GEMINI_TELEMETRY_*), GEMINI_CLI_HOME,
#: GEMINI_CLI_TRUST_WORKSPACE, GEMINI_DEFAULT_AUTH_TYPE and GEMINI_API_KEY_AUTH_MECHANISM.
GEMINI_ENV = ("GEMINI_*", "GOOGLE_API_KEY", "GOOGLE_CLOUD_*", "GOOGLE_GENAI_*", "GOOGLE_APPLICATION_CREDENTIALS",
              "GOOGLE_GEMINI_BASE_URL", "GOOGLE_VERTEX_BASE_URL")
#: aider: the keys of the models it is usually run with, the OpenAI-compatible base URL it reads
#: (`--openai-api-base` = AIDER_OPENAI_API_BASE; litellm also reads OPENAI_API_BASE / OPENAI_BASE_URL,
#: ANTHROPIC_API_BASE), and its own AIDER_* settings (AIDER_MODEL, AIDER_TIMEOUT, …); add others
#: (DEEPSEEK_API_KEY, OPENROUTER_API_KEY, …) with `[providers.aider] env`.
AIDER_ENV = ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "OPENAI_API_BASE", "OPENAI_BASE_URL", "ANTHROPIC_API_BASE",
             "AIDER_*")

# --- Each CLI's own state (what `writable` adds to the worktree, its admin folder and its TMPDIR) ----
#: claude: its settings, sessions and credentials folder, and the one state file it keeps in HOME; all of
#: it in CLAUDE_CONFIG_DIR instead when the lead sets that (`lanes.confine.provider_writable`).
CLAUDE_WRITABLE = ("~/.claude/", "~/.claude.json", "~/.config/claude/", "$CLAUDE_CONFIG_DIR/")
#: codex: CODEX_HOME (sessions, logs, auth): its default, and where the agent's environment moves it.
CODEX_WRITABLE = ("~/.codex/", "$CODEX_HOME/")
#: gemini: settings, trusted folders, its OAuth cache and checkpoints.
GEMINI_WRITABLE = ("~/.gemini/",)
#: aider: its caches and analytics (its chat history and tags cache live in the worktree).
AIDER_WRITABLE = ("~/.aider/", "~/.cache/aider/")

# --- Each CLI's own files in the worktree (never in the lane's diff, never accepted) ---------------
#: aider: `.aider.chat.history.md`, `.aider.input.history`, `.aider.tags.cache.v4/` (the pattern aider
#: itself adds to .gitignore; the preset runs it with --no-gitignore so the repository is not touched).
AIDER_WORKTREE_STATE = (".aider*",)

# --- What each structured error kind is called (`channels.base.ERROR_KINDS`; `lanes.classify`) --------
#: The structured error kinds that are the provider's configuration (CONFIG-ERROR, with the fix), that are
#: worth the same provider again after a back-off (LANE-FAILED marked `retry`), and that are its money.
CONFIG_KINDS = {"auth": "authentication refused", "forbidden": "access refused", "model": "unknown model",
                "trust": "untrusted folder"}
RETRY_KINDS = {"rate_limit": "rate limited by {name}", "overloaded": "{name} is overloaded",
               "server": "server error at {name}"}
BUDGET_KINDS = {"billing": "out of credit at {name}", "usage_limit": "usage limit of {name} reached"}
