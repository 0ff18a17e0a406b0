"""The simulated agent and the demo: a real process that follows a script, and a throw-away repo.

Owns: `agent` (the sim process: `python -m lanes_tui.engine.sim`), `script` (its step language),
`review` (its review mode: a simulated reviewer of a lane's diff), `demo` (the `--demo` repository
and lanes).
`agent`, `script` and `review` import the standard library only (a hundred sims start in a
benchmark); `demo` uses `config` and `lanes`. Never textual or rich.
Its place in the layers: pyproject's `[tool.importlinter]` contracts (docs/layout.md).
"""
