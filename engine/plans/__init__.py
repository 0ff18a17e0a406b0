"""Tasks from plan files: `## Phase N` blocks of a Markdown plan (`run --plan F --phase N`).

Owns: `phases` (which imports `core` only) and the plans below. Never textual or rich.

Plans of tickets (issue 11): `model` (the data), `validate`, `scope`, `waves`, `lines` (reading and
checking a plan file); `state` and `stored` (a launched plan on disk: frozen plan, memos, decision
log; read back trusting nothing), `decide` (the scheduler's pure decisions), `scheduler` (one tick:
gather the lanes, decide, start lanes), `commands` (launch, amend, cancel, resume), `supervisor`
(the detached plan supervisor, run as `python -m lanes_tui.engine.plans`), `ticker` (the dashboard
engine's plan ticks); `scorecard`, `scorecard_score` and `scorecard_compare` (fixed tasks
launched and scored, issue 15).
Its place in the layers: pyproject's `[tool.importlinter]` contracts (docs/layout.md).
"""
