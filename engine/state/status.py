"""The typed lane status: what `status --json` prints and what the dashboard's panes show.

One frozen dataclass crosses the bridge from the engine to the widgets, so a pane reads
`status.idle_s`, never `status.get("idle_s")`, and mypy sees every field. `to_json()` is the
`status --json` object (a CLI contract: the field names are fixed); `from_json()` reads one back,
filling what is missing with defaults, which is how tests and fakes build statuses.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field, fields
from typing import Any

from lanes_tui.engine.core.atomic import read_json
from lanes_tui.engine.core.errors import LanesError
from lanes_tui.engine.core.schema import NewerSchema, check_schema
from lanes_tui.engine.core.waits import load_text, span
from lanes_tui.engine.state.context import ContextMeter, parse_context
from lanes_tui.engine.state.lock_events import read_lock_view
from lanes_tui.engine.state.meters import lane_figures
from lanes_tui.engine.state.model import LIVE_STATES, LaneRecord
from lanes_tui.engine.state.samples import MeterSample, SampledProc, StallReport, parse_sample, parse_stall, parse_tree
from lanes_tui.engine.state.store import LaneStore

__all__ = ["FIRED_KEYS", "SAMPLE_FIELDS", "LaneStatus", "corrupt_status", "fired_finding", "lane_status"]

#: The fields a watchdog sample refreshes between two records.
SAMPLE_FIELDS = ("idle_s", "cpu_percent", "rss_bytes", "procs")
#: The keys of a fired cap's finding (`LaneRecord.governor["fired"]`) a status keeps.
FIRED_KEYS = ("cap", "value", "peak", "mechanism", "killed", "reason")


@dataclass(frozen=True)
class LaneStatus:
    """A lane as the lead sees it: the record, the newest watchdog sample and the spend meters."""

    id: str
    task: str = ""
    task_type: str = "backend"
    state: str = "queued"
    state_reason: str = ""
    result: str | None = None
    #: The provider that ran last (or is running).
    provider: str | None = None
    #: Each provider run so far: provider, model, result, … (`ProviderAttempt` as JSON).
    providers_tried: tuple[Mapping[str, Any], ...] = ()
    chain: tuple[str, ...] = ()
    attempt: int = 1
    worktree: str = ""
    branch: str = ""
    base_sha: str = ""
    target_branch: str | None = None
    created: float = 0.0
    updated: float = 0.0
    #: Seconds without activity (live lanes only; None otherwise).
    idle_s: float | None = None
    cpu_percent: float = 0.0
    rss_bytes: int = 0
    procs: int = 0
    output_bytes: int = 0
    #: Token counts as the meters keep them ({"total": …, "input": …}) or None when not reported.
    tokens: Mapping[str, Any] | int | None = None
    cost_usd: float | None = None
    cost_estimated: bool = False
    #: How full the running agent's context window is (`state.context`); None where the provider does
    #: not report the latest request's prompt (codex `exec --json`, gemini, aider, sim).
    context: ContextMeter | None = None
    session_id: str | None = None
    #: The watchdog's report when it stopped the lane (idle seconds, the tree it killed).
    stall: StallReport | None = None
    superseded_by: str | None = None
    #: Why lanes-tui cannot trust this lane's record (e.g. `lane.json` is not valid JSON), with the fix;
    #: None for a healthy lane. A field, not a state: the states are a contract scripts match on, and
    #: a corrupt record's lane is shown as `lost` (what lanes-tui knows of it) with this as the why.
    problem: str | None = None
    #: "waiting for a heavy slot, held by lane X since 12:03 (pytest)" while a `lanes-tui lock` of this
    #: live lane waits (from its events: `lock` never writes lane.json); None otherwise.
    lock_wait: str | None = None
    #: How many heavy runs the lane's agent took through `lanes-tui lock` (within the events' tail).
    locks: int = 0
    #: While the lane is `checking` and its gates wait for a heavy slot or the machine's load: the
    #: `gate-wait` start event (for, load, limit, held_by, budget_s, t: `decisions.gates.waits`); else None.
    gate_wait: Mapping[str, Any] | None = None
    #: The cap that stopped the lane (`FAILED-RESOURCE`): cap, value, peak, mechanism, killed, reason —
    #: strings only, from `lane.json`'s `governor.fired`; None when no cap fired.
    fired: Mapping[str, str] | None = None
    #: The conflict radar's findings for this lane (`git.radar`), each {"lane": the other lane's id (None
    #: against the target), "files": [...], "kind": "overlap" | "merge" | "target", "target": the branch}.
    conflicts: tuple[Mapping[str, Any], ...] = ()
    #: The plan and ticket this lane works on (`plans`), and the files it owns; None / empty by hand.
    plan: str | None = None
    ticket: str | None = None
    scope: tuple[str, ...] = ()
    #: The last review's verdict (CLEAN, BLOCKING, MISSING), None when no review was decided.
    review: str | None = None
    #: `run --best-of N`: the group the lane belongs to, and its rank in it (1 = best) once every lane
    #: of the group has ended; None otherwise (`decisions.ranking`).
    group: str | None = None
    rank: int | None = None
    #: Where the lane runs: `local`, or `ray` (a cluster node, named in `node` as `hostname (node id)`).
    runner: str = "local"
    node: str | None = None
    #: The lead's own findings this attempt was relaunched with (`recover --relaunch --note`); None otherwise.
    lead_note: str | None = None
    #: The live process tree from the newest sample (dashboard only; not part of `status --json`).
    tree: tuple[SampledProc, ...] | None = field(default=None, compare=False)

    @classmethod
    def corrupt(cls, lane_id: str, problem: str, when: float = 0.0) -> LaneStatus:
        """The row of a lane whose record cannot be read: shown, never hidden, never acted on blindly."""
        return cls(id=lane_id, task=lane_id, state="lost", state_reason=problem, created=when, updated=when,
                   problem=problem)

    @property
    def live(self) -> bool:
        """A supervisor is expected to be alive and own the lane."""
        return self.state in LIVE_STATES

    @property
    def model(self) -> str:
        """The model of the provider that ran last, or ""."""
        return str(self.providers_tried[-1].get("model") or "") if self.providers_tried else ""

    def gate_wait_text(self, now: float) -> str | None:
        """`load 5.1 > 4.0, 42s` / `a heavy slot held by x-a1 pid 7, 3m`: the Meters pane's words for the
        gates' open wait (None when there is none); `now` is the wall clock the events are stamped with."""
        wait = self.gate_wait
        if not wait:
            return None
        if wait.get("for") == "load":
            load, limit = wait.get("load"), wait.get("limit")
            what = load_text(load if _figure(load) else None, limit if _figure(limit) else None)
        else:
            held = wait.get("held_by")
            shown = "".join(ch if ch.isprintable() else "?" for ch in held[:120]) if isinstance(held, str) else ""
            what = "a heavy slot" + (f" held by {shown}" if shown else "")
        since = wait.get("t")
        return what + (f", {span(now - since)}" if isinstance(since, int | float) and _figure(since) else "")

    def with_sample(self, sample: MeterSample) -> LaneStatus:
        """This status with a newer watchdog sample's meters (and process tree) folded in; a figure
        the sample lacks (or had wrong: `sample.problems`) keeps its value."""
        fresh: dict[str, Any] = {k: getattr(sample, k) for k in SAMPLE_FIELDS if getattr(sample, k) is not None}
        return dataclasses.replace(self, **fresh, tree=sample.tree)

    def to_json(self) -> dict[str, Any]:
        """The `status --json` object."""
        data = asdict(self)
        del data["tree"]
        data["stall"] = None if self.stall is None else self.stall.to_json()
        data["context"] = None if self.context is None else self.context.to_json()
        data["providers_tried"] = [dict(p) for p in self.providers_tried]
        data["chain"] = list(self.chain)
        data["conflicts"] = [{**c, "files": list(c.get("files") or ())} for c in self.conflicts]
        data["scope"] = list(self.scope)
        return data

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> LaneStatus:
        """A status from a `status --json` object; unknown keys are ignored, missing ones default."""
        known = {f.name for f in fields(cls)}
        values = {k: v for k, v in data.items() if k in known}
        values["providers_tried"] = tuple(dict(p) for p in values.get("providers_tried") or ())
        values["chain"] = tuple(values.get("chain") or ())
        values["conflicts"] = tuple(dict(c) for c in values.get("conflicts") or () if isinstance(c, Mapping))
        values["scope"] = tuple(str(x) for x in values.get("scope") or ())
        if values.get("stall") is not None:
            values["stall"] = parse_stall(values["stall"])
        if "context" in values and not isinstance(values["context"], ContextMeter):
            values["context"] = parse_context(values["context"])
        if values.get("tree") is not None:
            values["tree"] = parse_tree(values["tree"])
        return cls(**values)


def _figure(value: Any) -> bool:
    """A number from the events file (which an agent can write): finite, not a bool."""
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


def lane_status(store: LaneStore, record: LaneRecord) -> LaneStatus:
    """The status of one lane from its record, its newest sample and its meters file."""
    sample = parse_sample(store.last_sample(record.id) or {})
    try:
        meters = _read_meters(store, record.id)
    except NewerSchema as exc:  # written by a newer lanes-tui: the lane is shown as that one problem
        return corrupt_status(store, record.id, exc)
    live = record.state in LIVE_STATES
    locks = read_lock_view(store.lane_paths(record.id).events)
    return LaneStatus(
        id=record.id,
        task=record.slug,
        task_type=record.task_type,
        state=record.state,
        state_reason=record.state_reason,
        result=record.result,
        provider=record.provider,
        providers_tried=tuple(asdict(a) for a in record.providers_tried),
        chain=tuple(record.chain),
        attempt=record.attempt,
        worktree=record.worktree,
        branch=record.branch,
        base_sha=record.base_sha,
        target_branch=record.target_branch,
        created=record.created,
        updated=record.updated,
        idle_s=sample.idle_s if live else None,
        cpu_percent=(sample.cpu_percent or 0.0) if live else 0.0,
        rss_bytes=(sample.rss_bytes or 0) if live else 0,
        procs=(sample.procs or 0) if live else 0,
        output_bytes=sample.output_bytes or 0,
        tokens=meters.get("tokens"),
        cost_usd=meters.get("cost_usd"),
        cost_estimated=bool(meters.get("cost_estimated", False)),
        context=meters.get("context"),
        session_id=record.session_id,
        stall=None if record.stall is None else parse_stall(record.stall),
        superseded_by=record.superseded_by,
        lock_wait=locks.wait if live else None,
        locks=locks.locks,
        gate_wait=_gate_wait(record, locks.gate_wait),
        fired=fired_finding(record.governor),
        plan=record.plan, ticket=record.ticket, scope=tuple(record.scope),
        review=record.review, group=record.group, runner=record.runner, node=record.node,
        lead_note=record.lead_note,
    )


def _gate_wait(record: LaneRecord, event: Mapping[str, Any] | None) -> Mapping[str, Any] | None:
    """The open gate wait while `checking`, if its event is not older than the record: the check writes
    the record first, so an older one was left open by a check that died mid-wait."""
    when = event.get("t") if event is not None else None
    if record.state != "checking" or not isinstance(when, int | float) or when < record.updated:
        return None
    return event


def fired_finding(governor: Any) -> dict[str, str] | None:
    """`governor["fired"]` with only the string values of `FIRED_KEYS`: lane.json may be edited by
    hand, and a pane formats whatever it is given. None when nothing usable is there."""
    fired = governor.get("fired") if isinstance(governor, Mapping) else None
    if not isinstance(fired, Mapping):
        return None
    kept = {key: fired[key] for key in FIRED_KEYS if isinstance(fired.get(key), str)}
    return kept if kept.get("cap") else None


def corrupt_status(store: LaneStore, lane_id: str, problem: Exception) -> LaneStatus:
    """The row of a lane whose `lane.json` could not be read, dated by the file's last change."""
    try:
        when = store.lane_paths(lane_id).record.stat().st_mtime
    except OSError:
        when = 0.0
    return LaneStatus.corrupt(lane_id, str(problem), when)


def _read_meters(store: LaneStore, lane_id: str) -> dict[str, Any]:
    """Token and cost figures the channel parsers keep in `meters.json` (none for plain output)."""
    try:
        data = read_json(store.lane_paths(lane_id).dir / "meters.json")
    except (FileNotFoundError, ValueError):
        return {}
    try:
        check_schema(data, "meters.json", f"meters.json of {lane_id}")
    except NewerSchema:
        raise
    except LanesError:
        return {}  # a damaged version: the figures are as good as missing
    return lane_figures(data)
