"""`python -m lanes_tui.app` is the same as the `lanes-tui` command (the lane shim uses it)."""

from lanes_tui.app.cli.main import main

raise SystemExit(main())
