"""The `lanes-tui` command line: owns the parser (`main`), every subcommand's module, `--help` and completion.

`main` reads the command word before it builds the parser and imports only that subcommand's module
(`COMMAND_MODULES`), so `lanes-tui ask` in an agent's shell loads `main`, `args` and `inbox` alone.
This file is only a docstring for the same reason: whatever it imported, every command would pay for.
Headless commands never import Textual or Rich; the dashboard (`lanes_tui.app.dashboard.run`) is
imported only when no command is given. The command line may import the dashboard, never the reverse
(pyproject's `app-parts` contract).
"""
