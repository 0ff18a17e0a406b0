"""Money and quota in the supervisor: the spend guard of a lane, and parking a lane whose quota ran out.

Split from `supervisor.main` so the run loop stays readable. A spend cap (`[lanes] max_cost_usd`,
`max_tokens`, `run --max-cost`) pauses the lane and asks the lead (`lanes.spend`). A provider whose
quota ran out, with no next provider in the chain, ends the lane OUT-OF-BUDGET — unless it said when
the quota resets: then the lane is parked (`waiting`, "parked until 15:00"), the supervisor sleeps
until then and runs the chain again in the same worktree, the quota message in the prompt. The lead
wakes a parked lane early with `lanes-tui recover ID` (a `resume-now` file in the lane's folder) or
ends it with `abandon` (which stops the supervisor).
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING

from lanes_tui.engine.core.clock import Clock
from lanes_tui.engine.lanes.agent_run import RunOutcome
from lanes_tui.engine.lanes.caps import LaneCaps
from lanes_tui.engine.lanes.parking import RESUME_NOW, STOPPED, find_reset, format_parked, park_until
from lanes_tui.engine.lanes.spend import SpendGuard, SpendSource, TreePauser
from lanes_tui.engine.procs.cgroup import LaneCgroup
from lanes_tui.engine.procs.sampler import sample_tree
from lanes_tui.engine.state.model import LaneRecord
from lanes_tui.engine.state.store import LaneStore

if TYPE_CHECKING:
    from lanes_tui.engine.inbox.store import InboxStore

#: How often one lane may be parked and resumed before its quota ending is final.
MAX_PARKS = 3
#: The output tail searched for a reset time (the quota line may not be the one the pattern hit).
TAIL_BYTES = 64 * 1024


def spend_guard(store: LaneStore, record: LaneRecord, caps: LaneCaps, cgroup: LaneCgroup | None,
                inbox: InboxStore | None, spend: SpendSource) -> SpendGuard | None:
    """The lane's spend guard, or None when it has no spend cap."""
    if not caps.max_cost_usd and not caps.max_tokens:
        return None
    pauser = TreePauser(cgroup, lambda: [p.pid for p in sample_tree()])
    return SpendGuard(record.id, max_cost_usd=caps.max_cost_usd, max_tokens=caps.max_tokens, spend=spend,
                      inbox=inbox, events=functools.partial(store.event, record.id),
                      pause=pauser.pause, resume=pauser.resume, attempt=record.attempt)


def quota_out(outcome: RunOutcome) -> bool:
    """The provider's own quota ended the run (not the lead's `no` to a spend question)."""
    return outcome.classification.result == "OUT-OF-BUDGET" and outcome.finding is None


def reset_time(outcome: RunOutcome, output: Path, now: datetime) -> datetime | None:
    """When the quota resets: the provider's structured error's `reset_at` first, else what its quota line
    or its last output says."""
    if outcome.classification.reset_at is not None:
        return datetime.fromtimestamp(outcome.classification.reset_at, tz=now.tzinfo)
    lines = [outcome.classification.reason]
    with contextlib.suppress(OSError), open(output, "rb") as handle:
        handle.seek(max(0, handle.seek(0, 2) - TAIL_BYTES))
        lines += handle.read().decode("utf-8", "replace").splitlines()[-200:]
    return find_reset(lines, now)


async def park(store: LaneStore, record: LaneRecord, until: datetime, *, stop: asyncio.Event, lane_dir: Path,
               clock: Clock, reason: str) -> bool:
    """Wait as a parked lane; True when it should run again (the time came, or the lead woke it)."""
    shown = format_parked(until)
    store.transition(record, "waiting", f"{shown} ({reason}); `lanes-tui recover {record.id}` resumes it now",
                     parked_until=until.timestamp())
    how = await park_until(until.timestamp(), stop=stop, resume_now=lane_dir / RESUME_NOW, clock=clock)
    store.event(record.id, "unparked", how=how)
    return how != STOPPED


def parked_block(reason: str, until: datetime) -> str:
    """What the resumed agent is told: why it stopped and that its earlier work is in the worktree."""
    return ("\n\n## Findings: the provider's quota ran out\n"
            f"> {reason}\n> The lane was {format_parked(until)} and resumes now in the same worktree: your "
            "earlier work is there (see `git status` and `git diff`). Continue from it; do not start over.\n")
