"""After the agent: gates, then the review, so the lane is `ready` or `rejected` with no lead around.

Split from `supervisor.main` (the chain of providers) because this half is the lane's judgement, not
its run: the gates (`decisions.check`), and when `[review]` applies the reviewer of another family
(`decisions.review.run`). The lead's stop reaches both: the gate processes and the reviewer stop, and
the lane says what was left undone and the command that does it.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
from pathlib import Path
from typing import TYPE_CHECKING

from lanes_tui.engine.core.errors import LanesError

if TYPE_CHECKING:
    from lanes_tui.engine.config.settings import Config
    from lanes_tui.engine.core.clock import Clock
    from lanes_tui.engine.lanes.agent_run import RunOutcome
    from lanes_tui.engine.state.model import LaneRecord
    from lanes_tui.engine.state.store import LaneStore

__all__ = ["decide", "head_back"]


def head_back(repo: Path, store: LaneStore, record: LaneRecord, worktree: Path, lane_dir: Path,
              outcome: RunOutcome) -> RunOutcome:
    """After every agent run: the lane's HEAD, reflog and index set back when the agent detached, committed
    or staged into its own object store (`git.head_repair`); the lane's reason then says its own commits
    were discarded and its files kept."""
    from lanes_tui.engine.git.head_repair import repair_after_run

    said = repair_after_run(repo, store, record.id, record.attempt, worktree, lane_dir)
    if said is None:
        return outcome
    reason = f"{outcome.classification.reason}; {said}" if outcome.classification.reason else said
    return dataclasses.replace(outcome, classification=dataclasses.replace(outcome.classification, reason=reason))


async def decide(repo: Path, config: Config, store: LaneStore, record: LaneRecord, *, clock: Clock,
                 stop: asyncio.Event) -> None:
    """Gates and packet for a lane that finished OK (then its review); the packet alone otherwise.

    A lane whose agent changed a shared virtualenv (`decisions.gates.shared_envs`) is rejected before any
    gate runs: its gates would pass on packages nobody else has.
    """
    # Imported here, not at the top: a supervisor loads the decisions only once its agent is done.
    from lanes_tui.engine.decisions.check import gate_lane
    from lanes_tui.engine.decisions.gates.shared_envs import changes as shared_env_changes
    from lanes_tui.engine.decisions.packet import build_packet, read_packet, write_packet
    from lanes_tui.engine.decisions.review.run import review_follows, review_lane
    from lanes_tui.engine.git.head_repair import head_note

    lane = store.lane_paths(record.id)
    changed = shared_env_changes(lane.dir)
    if record.result != "OK" or stop.is_set() or changed:
        packet = build_packet(record, [], clock=clock, previous=read_packet(lane))
        note = head_note(lane.dir, record.attempt)  # the agent's commits discarded: said beside the rest
        if changed or note:
            packet["warnings"] = [*packet.get("warnings", []), *changed, *([note] if note else [])]
        write_packet(lane, packet)
        if changed:
            store.transition(record, "rejected", "; ".join(changed))
        return
    gates = asyncio.create_task(gate_lane(repo, config, store, record, by_lead=False, clock=clock,
                                          review_next=review_follows(config, record)))
    halt = asyncio.create_task(stop.wait())
    await asyncio.wait({gates, halt}, return_when=asyncio.FIRST_COMPLETED)
    halt.cancel()
    if not gates.done():  # the lead stopped the lane mid-check: stop the gate processes too
        gates.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await gates
        store.transition(record, "exited", "the lead stopped the lane while its gates ran; "
                         f"`lanes-tui check {record.id}` runs them again")
        return
    gates.result()
    if record.state not in ("ready", "reviewing"):
        return
    if stop.is_set():
        _unreviewed(store, record, "the lead stopped the lane")
        return
    try:
        await review_lane(repo, config, store, record, by_lead=False, clock=clock, stop=stop)
    except LanesError as exc:  # the worktree went away, git refused the snapshot: ready, review MISSING
        store.event(record.id, "review-failed", reason=str(exc))
        _unreviewed(store, record, str(exc), always=True)
        return
    _unreviewed(store, record, "the lead stopped the lane")  # the review stopped while it waited for a slot


def _unreviewed(store: LaneStore, record: LaneRecord, why: str, *, always: bool = False) -> None:
    """A lane whose gates passed and whose review did not run is `ready` (the review MISSING, the command
    that runs it named), never left `reviewing` with no reviewer."""
    if always or record.state == "reviewing":
        store.transition(record, "ready", f"gates passed; review not run: {why}; `lanes-tui review {record.id}` "
                         "tries again")
