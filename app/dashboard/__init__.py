"""The dashboard: owns the Textual App (`app.LanesApp`), its screen and keys, the flows behind the keys,
the bridge from engine events to Textual messages, the feeds the panes draw, `run` (how `lanes-tui` and
`--demo` start it) and the stylesheet (`lanes.tcss`).

It builds on the widgets, the fence (`lanes_tui.fast`) and the engine's door; it never imports the
command line (pyproject's `app-parts` contract), and this file imports nothing, so a command that
needs only the key table (`lanes-tui help KEYS`) does not load Textual's App through it.
"""
