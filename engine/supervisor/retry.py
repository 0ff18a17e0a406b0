"""What a provider run's end means for the lane before the chain goes on: retried, or did nothing.

Split from `supervisor.main` (the chain) because both are judgements of one run's end:

- **Retry in the lane.** A rate limit, an overload or a 5xx (`Classification.retry`: a structured
  `ProviderError`, or a `retry_patterns` line) is the provider's passing trouble, not the lane's: the
  supervisor waits the back-off of `RETRY_BACKOFF_S` (the lane `waiting`, "rate limited by claude:
  retrying in 2m"), then runs the same provider again in the same worktree, resuming its own session
  where its CLI can (`Resumer.again`). Past the last delay the chain moves on as for OUT-OF-BUDGET.
  The wait is the parking's (`lanes.parking.park_until`): the injected clock paces it, the lead's stop
  ends it, `lanes-tui recover ID` (its `resume-now` file) retries at once.
- **NO-CHANGES.** An agent that exits 0 and left its worktree as the lane's base (no commit since the
  base, nothing staged, modified or untracked that git does not ignore) did nothing: it is not `OK`
  (PRODUCT.md: "no changes is not ready"), so no gates run on the unchanged tree and nothing reaches
  the accept queue (`lanes.no_changes`).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from pathlib import Path

from lanes_tui.engine.config.provider_facts import RETRY_BACKOFF_S, RETRY_KINDS
from lanes_tui.engine.config.providers import ProviderConfig
from lanes_tui.engine.core.clock import Clock
from lanes_tui.engine.core.errors import LanesError
from lanes_tui.engine.lanes.agent_run import RunOutcome
from lanes_tui.engine.lanes.classify import Classification, from_error, retry_from_text
from lanes_tui.engine.lanes.no_changes import NO_CHANGES, NO_CHANGES_REASON, unchanged
from lanes_tui.engine.lanes.parking import BACKOFF_MARK, RESUME_NOW, STOPPED, park_until
from lanes_tui.engine.state.model import LaneRecord
from lanes_tui.engine.state.store import LaneStore
from lanes_tui.engine.supervisor.resume import Resumer

__all__ = ["NO_CHANGES", "in_lane", "retry_in", "settle", "unchanged"]

log = logging.getLogger(__name__)

def retry_in(seconds: float) -> str:
    """A back-off as the why column says it: `30s`, `2m`, `1m30s`."""
    whole = max(0, round(seconds))
    minutes, secs = divmod(whole, 60)
    if not minutes:
        return f"{secs}s"
    return f"{minutes}m{secs}s" if secs else f"{minutes}m"


async def in_lane(outcome: RunOutcome, provider: ProviderConfig, run_again: Callable[[], Awaitable[RunOutcome]], *,
                  store: LaneStore, record: LaneRecord, resumer: Resumer, stop: asyncio.Event, clock: Clock,
                  lane_dir: Path, delays: tuple[float, ...] = RETRY_BACKOFF_S) -> RunOutcome:
    """Run `provider` again after each delay while its run ends `retry`; the last outcome.

    One that still says `retry` after the last delay says so in its reason, and the chain moves on.
    """
    for number, delay in enumerate(delays, start=1):
        if not outcome.classification.retry or stop.is_set():
            return outcome
        reason = outcome.classification.reason
        head = reason.split(": ", 1)[0]
        store.event(record.id, "retry", provider=provider.name, retry=number, of=len(delays), delay_s=delay,
                    reason=reason)
        store.transition(record, "waiting", f"{head}{BACKOFF_MARK}{retry_in(delay)} (retry {number} of "
                         f"{len(delays)}; `lanes-tui recover {record.id}` retries now)",
                         retry_at=clock.time() + delay)
        if await park_until(clock.time() + delay, stop=stop, resume_now=lane_dir / RESUME_NOW,
                            clock=clock) == STOPPED:
            return outcome
        last = record.providers_tried[-1] if record.providers_tried else None
        resumer.again(provider.name, last.session_id if last is not None else None, reason)
        outcome = await run_again()
    if outcome.classification.retry and delays:
        done = outcome.classification
        outcome.classification = Classification(done.result, f"{done.reason} (still after {len(delays)} retries)",
                                                retry=True, error=done.error)
    return outcome


def settle(outcome: RunOutcome, worktree: Path, base_sha: str, provider: ProviderConfig) -> RunOutcome:
    """An `OK` run that left the worktree as its base: a rate limit it reported (structured, or a
    `retry_patterns` line) makes it a retry (the CLI gave up and exited 0), else it is NO-CHANGES.
    Any other outcome is returned as it is."""
    if outcome.classification.result != "OK" or outcome.finding is not None:
        return outcome
    try:
        if not unchanged(worktree, base_sha):
            return outcome
    except LanesError as exc:  # git could not tell: the gates and the packet will say what is wrong
        log.warning("cannot tell whether %s changed anything: %s", worktree, exc)
        return outcome
    if outcome.error is not None and outcome.error.kind in RETRY_KINDS:  # it gave up on a rate limit
        outcome.classification = from_error(outcome.error, provider)
    elif outcome.retry_hit is not None:
        outcome.classification = retry_from_text(outcome.retry_hit, provider)
    else:
        outcome.classification = Classification(NO_CHANGES, NO_CHANGES_REASON)
    return outcome
