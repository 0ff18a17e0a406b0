"""`.lanes/config.toml`: typed, validated settings, the provider presets, and the config writer.

Owns: `settings` (read with tomllib into frozen dataclasses; every mistake names key, line and fix),
`key_lines` (the line of the config text a key sits on, for those errors),
`layers` (the lead's own `$XDG_CONFIG_HOME/lanes-tui/config.toml` under the repository's file, merged
key by key, each value's file known),
`providers` (presets for claude, codex, gemini, aider and sim: argv, channel, patterns, the
environment each may receive), `provider_keys` (the `[providers.NAME]` tables read over those
presets), `caps_keys` (the governor's keys of `[lanes]`), `worktree_keys`
(`[lanes] copy` and `setup`), `tiers` (`[tiers]`: heavy / standard /
light mapped to providers and models), `review` (`[review]`: cross-family review
of a lane's diff), `gates` (`[gates]`: commands, named steps, the venv, shared venvs),
`notify` (`[notify]`: the command that announces events to the lead), `write`
(`lanes-tui init` and edits that keep the lead's comments, through tomlkit).
Only `write` imports tomlkit, and nothing a lane runs imports `write`: a supervisor reads its config
but never pays for the writer. Its place in the layers: pyproject's `[tool.importlinter]` contracts (docs/layout.md).
"""
