"""The gates: the commands a lane's work must pass, planned, run in heavy slots and logged.

Owns: `run` (each configured command as a step in the lane's worktree: heavy slot, load wait, its own
process group and limit; `not-run` when no slot came, never `failed`), `plan` (the effective steps: the
project's venv, detected commands, timeouts), `log` (progress lines and each step's kept output),
`waits` (a wait for a slot or the load as the lead reads it: the lane's why, a `gate-wait` event),
`fence` (the gates' environment and kernel fence, shared with accept's commit hooks), `detect` (the
project's Python test runner, read from its files), `python` (the project's interpreter for its gates
and whether it has that runner), `no_tests` (a step that ran no tests, recognised per runner, so it never
passes), `shared_envs` (the digest of shared virtualenvs a lane must not change).
`decisions.check` is their one caller that decides: gates → packet → ready / rejected.
Never textual or rich. Its place in the layers: pyproject's `[tool.importlinter]` contracts (docs/layout.md).
"""
