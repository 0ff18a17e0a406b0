"""The accept journal (`accept.json` in the lane's folder) and the journals that cannot be finished.

An accept writes its journal before each step so that a killed accept is finished or rolled back by
the next reconcile (`accept.finish_interrupted_accepts`). When that fails — the lane's record was
edited, its worktree is locked, the target branch was deleted — the failure is written into the
journal (`stuck`) instead of being raised: one lane's stuck journal must never take `status`,
`wait`, `doctor`, other lanes' accepts or the dashboard down with it. `status` and `doctor` list the
stuck journals (`stuck_accepts`) with the fix, and the lane's own accept refuses until it is resolved.

The journal is read once into an `AcceptJournal` (typed, frozen, validated): a field of the wrong
shape (a hand edit's `"lane_head": 5`) is one LanesError naming it, which `stuck_accepts` and the
accept's refusal show like any other stuck journal. The file itself is unchanged JSON.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType
from typing import Any

from lanes_tui.engine.core.atomic import read_json, write_json_atomic
from lanes_tui.engine.core.errors import LanesError
from lanes_tui.engine.state.paths import LanePaths, StatePaths


@dataclass(frozen=True)
class StuckAccept:
    """An interrupted accept that reconcile could not finish or roll back, and what to do about it."""

    lane_id: str
    step: str
    what: str
    fix: str
    journal: Path

    def describe(self) -> str:
        return (f"lane {self.lane_id}: an interrupted accept (step {self.step}) cannot be finished: {self.what} — "
                f"{self.fix}; then `lanes-tui status` finishes it")


#: The journal's text fields (None when absent) and its lists of text.
_TEXT = ("target", "target_sha", "lane_head", "merged_sha", "base_sha_before", "state_before", "override",
         "override_review", "no_verify")
_LISTS = ("outside_scope", "review_refusals")


@dataclass(frozen=True)
class AcceptJournal:
    """One accept's journal: the step it reached and what a resume or a rollback needs."""

    step: str
    target: str | None
    target_sha: str | None
    lane_head: str | None
    merged_sha: str | None
    base_sha_before: str | None
    state_before: str | None
    override: str | None
    override_review: str | None
    no_verify: str | None
    outside_scope: tuple[str, ...]
    review_refusals: tuple[str, ...]
    #: Why reconcile could not resolve it ({"what", "fix"}), or None.
    stuck: Mapping[str, str] | None
    #: The journal as written (read-only), the base of the next step's write.
    data: Mapping[str, Any]

    @classmethod
    def from_json(cls, data: Mapping[str, Any], *, where: str = "accept.json") -> AcceptJournal:
        fix = "delete it; `lanes-tui finish` then cleans up the lane if its work was merged"
        for name in ("step", *_TEXT):
            if data.get(name) is not None and not isinstance(data[name], str):
                raise LanesError(f"{where}: {name} is not a string", fix)
        for name in _LISTS:
            value = data.get(name)
            if value is not None and (not isinstance(value, list) or not all(isinstance(v, str) for v in value)):
                raise LanesError(f"{where}: {name} is not a list of strings", fix)
        stuck = data.get("stuck")
        get = data.get  # every text field is a str or None: checked above
        return cls(step=str(get("step") or "?"), target=get("target"), target_sha=get("target_sha"),
                   lane_head=get("lane_head"), merged_sha=get("merged_sha"), base_sha_before=get("base_sha_before"),
                   state_before=get("state_before"), override=get("override"),
                   override_review=get("override_review"), no_verify=get("no_verify"),
                   outside_scope=tuple(data.get("outside_scope") or ()),
                   review_refusals=tuple(data.get("review_refusals") or ()),
                   stuck=MappingProxyType({"what": str(stuck.get("what", "")), "fix": str(stuck.get("fix", ""))})
                   if isinstance(stuck, dict) else None, data=MappingProxyType(dict(data)))

    @property
    def merged(self) -> str | None:
        """The commit the merge step names: the merged sha, else the lane's head when it was journalled."""
        return self.merged_sha or self.lane_head

    def to_json(self) -> dict[str, Any]:
        return dict(self.data)


def raw_journal(lane: LanePaths) -> dict[str, Any] | None:
    """The journal's JSON object, or None when there is none (or it is not a JSON object: `stuck_accepts`)."""
    try:
        data = read_json(lane.accept_journal)
    except (FileNotFoundError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def read_journal(lane: LanePaths) -> AcceptJournal | None:
    """The journal, parsed; None as for `raw_journal`. A field of the wrong shape is a LanesError."""
    data = raw_journal(lane)
    return None if data is None else AcceptJournal.from_json(data, where=str(lane.accept_journal))


def mark_stuck(lane: LanePaths, journal: Mapping[str, Any], error: Exception) -> None:
    """Record why the journal could not be resolved; written only when the reason changes (the
    dashboard reconciles every 2 s)."""
    if isinstance(error, LanesError):
        stuck = {"what": error.what, "fix": error.fix or "fix what the message names"}
    else:
        stuck = {"what": f"{type(error).__name__}: {error}", "fix": "fix what the message names"}
    if journal.get("stuck") != stuck:
        write_json_atomic(lane.accept_journal, {**journal, "stuck": stuck})


def stuck_accepts(repo: Path) -> list[StuckAccept]:
    """Every journal that reconcile tried and could not resolve, and every unreadable one."""
    paths = StatePaths(repo)
    found = []
    for lane_id in paths.lane_ids():
        lane = paths.lane(lane_id)
        if not lane.accept_journal.exists():
            continue
        try:
            journal = read_journal(lane)
        except LanesError as exc:  # a field of the wrong shape: stuck, with what is wrong
            found.append(StuckAccept(lane_id, "?", exc.what, exc.fix or "", lane.accept_journal))
            continue
        if journal is None:
            found.append(StuckAccept(lane_id, "?", f"{lane.accept_journal} is not a JSON object",
                                     "delete it; `lanes-tui finish` then cleans up the lane if its work was merged",
                                     lane.accept_journal))
            continue
        if journal.stuck is not None:
            found.append(StuckAccept(lane_id, journal.step, journal.stuck["what"], journal.stuck["fix"],
                                     lane.accept_journal))
    return found
