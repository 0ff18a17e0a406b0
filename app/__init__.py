"""What the lead touches, in two parts, above the widgets and the engine's door (docs/layout.md).

- `cli/`: the `lanes-tui` command line (the parser, one module per group of subcommands, help,
  completion). It may import the dashboard (to run it, and its key table for `lanes-tui help KEYS`).
- `dashboard/`: the Textual App, its screen, the flows behind the keys, the bridge from engine events
  to Textual messages, and the feeds the panes draw. It never imports the command line.
- `attach_client`: the terminal side of attach, shared by `lanes-tui attach` and the dashboard's `t`;
  it imports neither part.

Who may import whom is the `app-parts` contract in pyproject's `[tool.importlinter]`. This file
imports nothing: the lean `lanes-tui ask` loads it.
"""
