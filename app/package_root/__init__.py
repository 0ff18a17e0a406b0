"""lanes-tui: a dashboard and an engine for a lead who runs several AI coding agents in git worktrees.

Only the package's root: the code is in `lanes_tui.app`, `lanes_tui.widgets` and `lanes_tui.engine`
(docs/layout.md). This file exists so that `python -m lanes_tui` finds `__main__`; it imports nothing,
because every process of lanes-tui (the lean `lanes-tui ask`, the simulated agent) loads it.
"""
