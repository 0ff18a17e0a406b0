"""`python -m lanes_tui.engine.supervisor`: how the launcher starts a lane's supervisor."""

import sys

# asyncio imports `ssl` when it can (4.5 MB of RSS here) and a supervisor never opens a TLS socket:
# without it asyncio runs the same, minus TLS transports (issue 15, the lean supervisor).
sys.modules.setdefault("ssl", None)  # type: ignore[arg-type]

from lanes_tui.engine.supervisor.entry import main  # noqa: E402

sys.exit(main())
