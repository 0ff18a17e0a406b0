"""`python -m lanes_tui.engine.supervisor`: how the launcher starts a lane's supervisor."""

import sys

from lanes_tui.engine.supervisor.main import main

sys.exit(main())
