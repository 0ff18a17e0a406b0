"""The lane status objects of `status --json` and the dashboard's Lanes table (a CLI contract)."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from lanes_tui.engine.state.model import LIVE_STATES, LaneRecord
from lanes_tui.engine.state.store import LaneStore


@dataclass(frozen=True)
class LaneStatus:
    """Placeholder until the typed status lands (same fields as `status --json`)."""

    id: str


def lane_status(store: LaneStore, record: LaneRecord, now: float | None = None) -> dict[str, Any]:
    sample = store.last_sample(record.id) or {}
    meters = _read_meters(store, record.id)
    live = record.state in LIVE_STATES
    return {
        "id": record.id,
        "task": record.slug,
        "task_type": record.task_type,
        "state": record.state,
        "state_reason": record.state_reason,
        "result": record.result,
        "provider": record.provider,
        "providers_tried": [asdict(a) for a in record.providers_tried],
        "chain": record.chain,
        "attempt": record.attempt,
        "worktree": record.worktree,
        "branch": record.branch,
        "base_sha": record.base_sha,
        "target_branch": record.target_branch,
        "created": record.created,
        "updated": record.updated,
        "idle_s": sample.get("idle_s") if live else None,
        "cpu_percent": sample.get("cpu_percent", 0.0) if live else 0.0,
        "rss_bytes": sample.get("rss_bytes", 0) if live else 0,
        "procs": sample.get("procs", 0) if live else 0,
        "output_bytes": sample.get("output_bytes", 0),
        "tokens": meters.get("tokens"),
        "cost_usd": meters.get("cost_usd"),
        "cost_estimated": meters.get("cost_estimated", False),
        "session_id": record.session_id,
        "stall": record.stall,
        "superseded_by": record.superseded_by,
    }


def _read_meters(store: LaneStore, lane_id: str) -> dict[str, Any]:
    """Token and cost figures the channel parsers keep in `meters.json` (none for plain output)."""
    from lanes_tui.engine.core.atomic import read_json

    try:
        data = read_json(store.lane_paths(lane_id).dir / "meters.json")
    except (FileNotFoundError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}
