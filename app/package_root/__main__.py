"""`python -m lanes_tui` is the `lanes-tui` command, for a machine where the script is not on PATH."""

from lanes_tui.app.cli.main import main

raise SystemExit(main())
