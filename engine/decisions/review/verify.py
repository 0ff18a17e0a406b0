"""`lanes-tui verify ID --evidence TEXT`: the lead's own check of a lane, kept in its packet.

Gates and a reviewer are machines; a lead who ran the app, read the diff or tried the feature says so
with evidence. The verification records who (git's `user.name`, else the login name), when, the text,
and the digest of the lane's diff at that moment (`lane_diff.diff_digest`), so the accept modal can
show it and say when the lane has changed since (stale).
"""

from __future__ import annotations

import getpass
from pathlib import Path

from lanes_tui.engine.config.settings import Config
from lanes_tui.engine.core.clock import Clock, RealClock
from lanes_tui.engine.core.errors import LanesError
from lanes_tui.engine.decisions.lane_diff import work_digest
from lanes_tui.engine.decisions.packet import build_packet, read_packet, write_packet
from lanes_tui.engine.decisions.results import Verification
from lanes_tui.engine.git import git_snapshot
from lanes_tui.engine.git.commands import run_git
from lanes_tui.engine.git.lane_paths import locate_lane, working_tree
from lanes_tui.engine.state.model import LIVE_STATES
from lanes_tui.engine.state.paths import StatePaths
from lanes_tui.engine.state.store import LaneStore, lane_operation

__all__ = ["MAX_EVIDENCE", "lead_name", "verify_lane"]

#: The evidence is a note, not a log: 4,000 characters at most.
MAX_EVIDENCE = 4000


def lead_name(repo: Path) -> str:
    """Who the lead is: the name git would author a commit with here (`GIT_AUTHOR_NAME`, else
    `user.name`), else the login name."""
    proc = run_git(repo, "var", "GIT_AUTHOR_IDENT", check=False)
    ident = proc.stdout.decode("utf-8", "replace").strip() if proc.returncode == 0 else ""
    name = ident.split(" <", 1)[0].strip() if " <" in ident else ""
    if name:
        return name
    try:
        return getpass.getuser()
    except (KeyError, OSError):
        return "the lead"


def verify_lane(repo: Path, config: Config, lane_id: str, evidence: str, *, by: str | None = None,
                clock: Clock | None = None) -> Verification:
    """Record the lead's verification in the lane's packet and events; returns it."""
    text = evidence.strip()
    if not text:
        raise LanesError("--evidence is empty", "say what you checked, e.g. --evidence \"ran the app; login works\"")
    if len(text) > MAX_EVIDENCE:
        raise LanesError(f"--evidence is {len(text)} characters, over {MAX_EVIDENCE}",
                         "summarise it, and point to a file or a link for the rest")
    paths = StatePaths(repo)
    with lane_operation(paths, lane_id, "verify"):
        store = LaneStore(paths, clock)
        record = store.read(lane_id)
        if record.state in ("accepted", "abandoned"):
            raise LanesError(f"lane {lane_id} is {record.state}; there is nothing left to verify")
        if record.state in LIVE_STATES or record.state in ("checking", "reviewing"):
            raise LanesError(f"lane {lane_id} is still {record.state}",
                             f"wait for it (`lanes-tui wait {lane_id}`) and verify it then")
        worktree = working_tree(locate_lane(repo, lane_id, record, default_root=config.lanes.worktree_root))
        git_snapshot.refuse_if_changed(repo, lane_id)
        lane = store.lane_paths(lane_id)
        packet = read_packet(lane) or build_packet(record, [], clock=clock, worktree=worktree)
        done = {"by": by or lead_name(repo), "at": (clock or RealClock()).time(), "evidence": text,
                "diff_digest": work_digest(worktree, record.base_sha,  # of the frozen work, as accept compares
                                           frozen if isinstance(frozen := packet.get("frozen_sha"), str) else None)}
        packet["verification"] = done
        write_packet(lane, packet)
        store.event(lane_id, "verified", by=done["by"], evidence=text[:200], diff_digest=done["diff_digest"])
        return Verification.from_json(done)
