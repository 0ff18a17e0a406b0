"""The lane's result packet (`packet.json`): what ran, what changed, what the gates said, what next.

Accept trusts nothing but this packet and the worktree: the digest in it proves the files are still
the ones the gates checked.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from lanes_tui.engine.core.atomic import read_json
from lanes_tui.engine.core.clock import Clock, RealClock
from lanes_tui.engine.core.errors import LanesError
from lanes_tui.engine.core.schema import SCHEMA_KEY, NewerSchema, check_schema, stamped
from lanes_tui.engine.decisions.gates.run import GateResult, summarise
from lanes_tui.engine.decisions.results import Packet
from lanes_tui.engine.decisions.scope import outside_scope
from lanes_tui.engine.git import worktrees
from lanes_tui.engine.git.frozen_work import FrozenWork, gate_files
from lanes_tui.engine.state.model import LaneRecord
from lanes_tui.engine.state.paths import LanePaths
from lanes_tui.engine.state.seals import write_sealed

REVIEW_MISSING = "MISSING"


def next_step(result: str | None, gates_status: str, *, last_attempt: bool = False) -> str:
    """What the lead would do next: review passed work, redo failed work, take over a stuck lane, or
    one whose `last_attempt` (`[lanes] attempts`) is used: `recover --relaunch` refuses another."""
    if result == "CONFIG-ERROR":
        return "stop"
    if result in ("LANE-STALLED", "FAILED-RESOURCE", "OUT-OF-BUDGET"):
        return "takeover"
    if result != "OK" or gates_status == "failed":
        return "takeover" if last_attempt else "redo"
    return "review"


def build_packet(record: LaneRecord, gates: list[GateResult], *, clock: Clock | None = None,
                 previous: dict[str, Any] | None = None, worktree: Path | None = None,
                 look: bool = True, frozen: FrozenWork | None = None) -> dict[str, Any]:
    """Collect the changed files and their digest now, so accept can prove nothing moved since.

    `worktree` is the lane's verified folder (`git.lane_paths`); without it the record's is read
    (reading only). With `look=False` no folder is read at all: the record's path is not trusted.
    With `frozen` (the work `check` froze before its gates, `git.frozen_work`) the changed files are
    the snapshot's, the files the gates changed on top of it are `gate_files` (never merged), and the
    digest covers the worktree as the gates left it, so accept still sees a later edit.
    """
    where = worktree or Path(record.worktree)
    seen = look and where.is_dir()
    after = worktrees.changed_files(where, record.base_sha) if seen else []
    digest = worktrees.worktree_digest(where, after) if seen else ""
    changed = frozen.files if frozen is not None and seen else after
    gates_status = summarise(gates)
    packet: dict[str, Any] = {
        "lane": record.id,
        "task": record.prompt,
        "type": record.task_type,
        "attempt": record.attempt,
        "providers_tried": [dict(a.__dict__) for a in record.providers_tried],
        "result": record.result,
        "worktree": str(where),
        "branch": record.branch,
        "base_sha": record.base_sha,
        "target_branch": record.target_branch,
        "changed_files": changed,
        "worktree_digest": digest,
        # The ticket's scope (empty: none) and the changed files outside it, which accept refuses.
        "scope": list(record.scope),
        "outside_scope": outside_scope(changed, record.scope),
        "gates": [g.to_json() for g in gates],
        "gates_status": gates_status,
        "review": REVIEW_MISSING,
        "next": next_step(record.result, gates_status,
                          last_attempt=0 < record.max_attempts <= record.attempt),
        "stall": record.stall,
        "created": (clock or RealClock()).time(),
    }
    if frozen is not None and seen:
        packet["frozen_sha"] = frozen.sha
        packet["gate_files"] = gate_files(where, record.base_sha, frozen.tree)
    # The review and the lead's verification outlive a new check: accept compares their digests with the
    # lane's, so one made before the worktree changed is stale, never silently current.
    for kept in ("override", "accepted_sha", "conflict_files", "history", "review_detail", "verification"):
        if previous and kept in previous:
            packet[kept] = previous[kept]
    detail = packet.get("review_detail")
    if isinstance(detail, dict) and detail.get("verdict") in ("CLEAN", "BLOCKING", "MISSING"):
        packet["review"] = detail["verdict"]
    return packet


#: The fields readers use, with the type each must have (lists: the type of every item).
TYPED_FIELDS: dict[str, tuple[type, type | None]] = {
    "gates": (list, dict), "changed_files": (list, str), "conflict_files": (list, str),
    "scope": (list, str), "outside_scope": (list, str), "gate_files": (list, str), "frozen_sha": (str, None),
    "gates_status": (str, None), "review": (str, None), "next": (str, None),
}


def read_packet(lane: LanePaths) -> dict[str, Any] | None:
    """The lane's packet; None when there is none, or when it is not one readers can use (a hand
    edit's `"gates": 5` or `"changed_files": "a.py"`): then it is as good as missing, so `accept`
    asks for a `check`, which writes a new one."""
    try:
        data = read_json(lane.packet)
    except (FileNotFoundError, ValueError):
        return None
    if not isinstance(data, dict):
        return None
    try:  # a newer packet is refused, never taken for missing (a check would write over it)
        check_schema(data, "packet.json", f"packet.json of {lane.dir.name}")
    except NewerSchema:
        raise
    except LanesError:
        return None
    data.pop(SCHEMA_KEY, None)  # how the file is written, not part of the packet its readers pass on
    for name, (kind, item) in TYPED_FIELDS.items():
        value = data.get(name, kind())
        if not isinstance(value, kind):
            return None
        if item is not None and isinstance(value, list) and not all(isinstance(v, item) for v in value):
            return None
    return data


def load_packet(lane: LanePaths) -> Packet | None:
    """The lane's packet, parsed once into its typed form (`decisions.results.Packet`); None as for
    `read_packet` (none, or not one readers can use)."""
    data = read_packet(lane)
    return None if data is None else Packet.from_json(data, lane=lane.dir.name)


def write_packet(lane: LanePaths, packet: dict[str, Any]) -> None:
    """Every writer of packet.json comes here: the file (with its schema version), then its seal (`state.seals`)."""
    write_sealed(lane.packet, stamped(packet, "packet.json"))


def state_after_gates(record: LaneRecord, gates_status: str, *, by_lead: bool = False) -> tuple[str, str]:
    """The lane state a finished check leads to, with the reason the lead sees.

    After the agent, gates only decide for a lane that finished OK. A check the lead asks for
    (`check`, `recover --recheck`) judges the worktree as it is, whatever the agent's result was.
    """
    if record.result != "OK" and not by_lead:
        return ("stalled" if record.result == "LANE-STALLED" else "exited",
                f"{record.result}: no gates run on a lane that did not finish OK")
    if gates_status in ("passed", "none"):
        return "ready", "gates passed" if gates_status == "passed" else "no gates configured"
    if gates_status == "not-run":
        return "exited", f"gates not run (heavy slots busy): `lanes-tui check {record.id}` to try again"
    return "rejected", "a gate failed"
