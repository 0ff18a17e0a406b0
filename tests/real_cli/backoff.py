"""Cutting a lane's back-offs short, as the lead does: `lanes-tui recover ID` while it waits to retry.

A rate-limited, overloaded or failing provider is retried in the lane after 30 s, 2 min and 5 min
(`provider_facts.RETRY_BACKOFF_S`); a test plays the lead who does not want to wait.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tests.helpers import cli, status, wait_for

#: States a lane is still at work in.
LIVE = ("queued", "launching", "running", "waiting", "checking", "reviewing")


def cut_back_offs(repo: Path, lane: str, *, fallback: str | None, timeout: float,
                  env: dict[str, str] | None = None) -> int:
    """Each back-off of `lane` cut short with `recover`, until it settles or `fallback` is tried; how many."""
    def turn() -> tuple[str, dict[str, Any]] | None:
        row = status(repo, lane)
        if row["state"] not in LIVE or any(t["provider"] == fallback for t in row["providers_tried"]):
            return "done", row
        if row["state"] == "waiting" and "retrying in" in (row["state_reason"] or ""):
            return "backoff", row
        return None

    for cut in range(10):
        what, row = wait_for(turn, timeout=timeout)
        if what == "done":
            return cut
        assert cli(repo, "recover", lane, env=env).returncode == 0, status(repo, lane)
        reason = row["state_reason"]
        wait_for(lambda said=reason: status(repo, lane)["state_reason"] != said, timeout=timeout)
    raise AssertionError(f"{lane} retried more than 10 times: {status(repo, lane)}")
