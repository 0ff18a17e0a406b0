"""The environment an agent gets: the lead's own lanes-tui secrets scrubbed, the lane's variables added.

Anything named `LANES_*` or `LANES_TUI_*` belongs to lanes-tui itself (tokens for publishing, the
dashboard's settings) and never reaches an agent; the agent's own API keys pass through untouched,
since it cannot work without them.
"""

from __future__ import annotations

import os
import shlex
import sys
from collections.abc import Mapping
from pathlib import Path

from lanes_tui.engine.core.atomic import write_text_atomic

SCRUB_PREFIXES = ("LANES_",)


def lane_environment(base: Mapping[str, str], *, lane_id: str, attempt: int, state_dir: Path,
                     worktree: Path, bin_dir: Path) -> dict[str, str]:
    env = {k: v for k, v in base.items() if not k.startswith(SCRUB_PREFIXES)}
    env["LANES_LANE"] = lane_id
    env["LANES_ATTEMPT"] = str(attempt)
    env["LANES_HOME"] = str(state_dir)
    env["LANES_WORKTREE"] = str(worktree)
    env["PATH"] = os.pathsep.join(p for p in (str(bin_dir), base.get("PATH", os.defpath)) if p)
    env.setdefault("PYTHONUNBUFFERED", "1")
    return env


def ensure_cli_shim(bin_dir: Path) -> Path:
    """A `lanes-tui` on the agent's PATH that runs this very installation, venv or not."""
    shim = bin_dir / "lanes-tui"
    text = f"#!/bin/sh\nexec {shlex.quote(sys.executable)} -m lanes_tui.app \"$@\"\n"
    try:
        if shim.read_text(encoding="utf-8") == text:
            return shim
    except OSError:
        pass
    bin_dir.mkdir(parents=True, exist_ok=True)
    write_text_atomic(shim, text)
    shim.chmod(0o755)
    return shim
