"""`python -m lanes_tui.engine.plans --repo R --plan NAME --detach`: the plan supervisor (`plans.supervisor`).

`--repo R --launch FILE` freezes a plan and starts what can start, with no supervisor (the demo).
"""

from __future__ import annotations

import sys

from lanes_tui.engine.plans.commands import launch_main
from lanes_tui.engine.plans.supervisor import main

if __name__ == "__main__":
    arguments = sys.argv[1:]
    sys.exit(launch_main(arguments) if "--launch" in arguments else main(arguments))
