"""The real agent CLIs the real-CLI tier runs, at the versions it was last run with: the one place to bump
(docs/providers.md, "Bumping a CLI")."""

from __future__ import annotations

#: npm packages: the CLI's command name → (package, version).
NPM = {
    "claude": ("@anthropic-ai/claude-code", "2.1.328"),
    "codex": ("@openai/codex", "0.169.0"),
    "gemini": ("@google/gemini-cli", "0.61.0"),
}
#: PyPI packages, each installed into a virtualenv of its own: command name → (package, version).
PYPI = {
    "aider": ("aider-chat", "0.86.2"),
}
