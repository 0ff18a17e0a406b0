"""The simulated agent and the demo: a real process that follows a script, and a throw-away repo.

Owns: `agent` (the sim process: `python -m lanes_tui.engine.sim`), `script` (its step language),
`review` (its review mode: a simulated reviewer of a lane's diff), `demo` (the `--demo` repository
and lanes).
May import: `agent`, `script` and `review` the standard library only (a hundred sims start in a benchmark);
`demo` may import `config` and `lanes`. Never textual or rich.
"""
