"""`python -m lanes_tui.engine.sim`: the sim provider's argv (docs/sim.md)."""

import sys

from lanes_tui.engine.sim.agent import main

sys.exit(main())
