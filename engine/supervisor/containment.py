"""The supervisor's hold on its lane: the containment cgroup and the governor's caps, made and undone.

Split from `supervisor.main` so the run loop reads as the lane's story; this is the machinery the
story starts inside (`enter`) and leaves (`leave`): the lane's cgroup (stopping the lane stops
everything it started, `procs.cgroup`), the caps (`lanes.governor`), and the record of both in the
lane's events and `lane.json`.
"""

from __future__ import annotations

import logging
import os
from dataclasses import dataclass
from pathlib import Path

from lanes_tui.engine.config.settings import Config, ProviderConfig
from lanes_tui.engine.core import slots
from lanes_tui.engine.lanes import confine
from lanes_tui.engine.lanes.caps import lane_caps, lane_timeouts
from lanes_tui.engine.lanes.governor import LaneGovernor
from lanes_tui.engine.procs import cgroup
from lanes_tui.engine.procs.cgroup import LaneCgroup
from lanes_tui.engine.state.model import LaneRecord
from lanes_tui.engine.state.paths import heavy_slot_dir, repo_key
from lanes_tui.engine.state.store import LaneStore

log = logging.getLogger(__name__)


@dataclass
class Hold:
    """What `enter` made for the lane; `leave` undoes it."""

    cgroup: LaneCgroup | None
    governor: LaneGovernor


def enter(repo: Path, config: Config, store: LaneStore, record: LaneRecord, lane_dir: Path) -> Hold:
    """The lane's cgroup (or none, said once in the events) and its caps, recorded in `lane.json`.

    Raises LanesError when the record's own caps (`run --memory …`, `--timeout`, kept in lane.json) do
    not parse.
    """
    caps = lane_caps(config.lanes, record.caps)
    lane_timeouts(config.lanes, record.caps)  # read again for each run; a wrong one is refused here, once
    support = cgroup.detect()
    made = cgroup.LaneCgroup.create(support, repo_key(repo), record.id)
    if made is None:
        store.event(record.id, "containment", mechanism="none", detail=support.describe())
    else:
        cgroup.write_record(lane_dir, made)
        store.event(record.id, "containment", mechanism=made.mechanism, cgroup=str(made.path))
    governor = LaneGovernor.start(caps, repo_key(repo), record.id, made,
                                  lambda kind, **data: store.event(record.id, kind, **data))
    record.governor = governor.record()
    store.write(record)
    return Hold(made, governor)


def leave(store: LaneStore, record: LaneRecord, hold: Hold | None) -> None:
    """Whatever the agents left running in the lane's cgroup is killed, however it escaped its process
    group; then the cgroup and the caps' folders are removed."""
    if hold is None:
        return
    if hold.cgroup is not None:
        left = hold.cgroup.kill()
        if left:
            store.event(record.id, "cgroup-killed", pids=left)
        hold.cgroup.remove()
    hold.governor.close()


def check_joined(store: LaneStore, record: LaneRecord, hold: Hold | None, pid: int, name: str) -> None:
    """Say in the events when the agent did not land in its cgroups (then it runs uncontained there)."""
    if hold is None:
        return
    hold.governor.agent = (pid, name)
    if hold.cgroup is not None and pid not in hold.cgroup.pids() and cgroup.pids_alive([pid]):
        store.event(record.id, "containment", mechanism="none",
                    detail=f"the agent (pid {pid}) could not join {hold.cgroup.path}")
    missing = hold.governor.joined(pid)
    if missing:
        store.event(record.id, "governor", problem=f"the agent (pid {pid}) is outside the {', '.join(missing)} "
                                                   "cgroup: those caps do not hold for it")


def fence(repo: Path, store: LaneStore, record: LaneRecord, worktree: Path, provider: ProviderConfig,
          env: dict[str, str], hold: Hold | None) -> confine.Confinement:
    """The kernel's fence round one provider run (`lanes.confine`), recorded in `lane.json` and the events.

    Raises LanesError when the kernel cannot confine the agent and the lead did not allow that.
    """
    allowed = bool(hold and hold.governor.caps.allow_uncontained)
    made = confine.confine(repo, record.id, worktree, kind="agent", allowed_uncontained=allowed,
                           writable=confine.provider_writable(provider.writable, env))
    record.confinement = {**made.record(), "provider": provider.name}
    store.write(record)
    store.event(record.id, "confinement", **record.confinement)
    return made


def ensure_heavy_slots(config: Config) -> None:
    """The heavy-slot files made (and damaged ones rebuilt) before the agent runs: an agent that may not
    write their folder takes a slot on a file that is already there (`core.slots`). As many as
    `lanes-tui lock` may take: `LANES_HEAVY_SLOTS`, `[gates] slots` or cores ÷ 2 (`lanes.heavy.slot_count`,
    not imported: it brings shutil into every supervisor)."""
    raw = os.environ.get("LANES_HEAVY_SLOTS", "").strip()
    count = min(64, max(config.gates.slots, (os.cpu_count() or 1) // 2, int(raw) if raw.isdigit() else 0))
    try:
        for line in slots.ensure_slots(heavy_slot_dir(), count):
            log.warning("heavy slots: %s", line)
    except OSError as exc:  # best effort: a gate or `doctor` rebuilds what this could not
        log.warning("heavy slots not checked: %s", exc)
