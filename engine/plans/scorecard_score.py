"""Scoring one scorecard run: a lane (and the lanes the lead relaunched it as) or a plan's lanes.

Why a module of its own: the figures come from several places (the lane records, their events, the
inbox, `meters.json`, the pass check run on the work) and the plan case adds a merge of the tickets'
work, which `scorecard_compare` (records, baselines, the pass bar) should not have to know about.

What counts as the lead's intervention: an answer to a lane's question (not a timeout's default), a
line sent to a running lane, and a relaunch the lead asked for (`recover --relaunch`). A plan's own
relaunch of a rejected ticket is the plan working as written: it shows as more attempts (no first
try), not as an intervention.
"""

from __future__ import annotations

import shutil
import subprocess
import tempfile
from pathlib import Path
from typing import Any

from lanes_tui.engine.core.atomic import read_json, read_jsonl
from lanes_tui.engine.core.errors import LanesError
from lanes_tui.engine.plans.scorecard import TIMEOUT_S, filled, prepared_runs
from lanes_tui.engine.state.meters import METERS_FILE, lane_figures
from lanes_tui.engine.state.model import LIVE_STATES, LaneRecord
from lanes_tui.engine.state.paths import StatePaths
from lanes_tui.engine.state.store import LaneStore


def _read(path: Path) -> Any:
    try:
        return read_json(path)
    except (ValueError, OSError):
        return None


def _events(store: LaneStore, lane_id: str) -> list[dict[str, Any]]:
    path = store.lane_paths(lane_id).events
    return [e for e in read_jsonl(path) if isinstance(e, dict)] if path.is_file() else []


def _answers(paths: StatePaths, lane_id: str) -> int:
    """The lead's answers to this lane's questions (a timeout's default is no intervention)."""
    count = 0
    for answer in paths.lane_inbox(lane_id).glob("*.answer.json"):
        data = _read(answer)
        if isinstance(data, dict) and data.get("by") not in ("timeout", "default"):
            count += 1
    return count


def _chain(store: LaneStore, first: str) -> list[LaneRecord]:
    """The lane and the lanes it was relaunched as (`relaunched` events), oldest first."""
    chain = [store.read(first)]
    while True:
        after = [e.get("next") for e in _events(store, chain[-1].id) if e.get("type") == "relaunched"]
        nxt = next((n for n in reversed(after) if isinstance(n, str)), None) or chain[-1].superseded_by
        if not nxt or nxt in {r.id for r in chain} or not store.exists(nxt):
            return chain
        chain.append(store.read(nxt))


def _lane_figures(store: LaneStore, record: LaneRecord) -> dict[str, Any]:
    """One lane's own figures: interventions, review rounds, tokens, cost, its start and end."""
    events = _events(store, record.id)
    meters = lane_figures(_read(store.lane_paths(record.id).dir / METERS_FILE))
    tokens = meters.get("tokens") or {}
    ends = [a.ended for a in record.providers_tried if a.ended]
    return {
        "answers": _answers(store.paths, record.id),
        "sends": sum(1 for e in events if e.get("type") == "send"),
        "relaunches": sum(1 for e in events if e.get("type") == "relaunched" and "plan" not in e),
        "review_rounds": sum(1 for e in events if e.get("type") == "review"),
        "tokens": int(tokens.get("total", 0) or (tokens.get("input", 0) + tokens.get("output", 0))),
        "cost_usd": float(meters.get("cost_usd") or 0.0),
        "start": record.created, "end": max(ends) if ends else record.updated,
    }


def _git(args: list[str], cwd: Path) -> str:
    proc = subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, timeout=TIMEOUT_S, check=False)
    if proc.returncode != 0:
        raise LanesError(f"git {' '.join(args)} failed in {cwd}: {proc.stderr.strip()[:200]}")
    return proc.stdout


def _overlay(record: LaneRecord, dest: Path) -> None:
    """Copy what a lane changed since its base (committed or not, new files too) into `dest`."""
    worktree = Path(record.worktree)
    changed = _git(["diff", "--name-only", "-z", record.base_sha], worktree).split("\0")
    changed += _git(["ls-files", "-z", "--others", "--exclude-standard"], worktree).split("\0")
    for rel in sorted({c for c in changed if c and not c.startswith(".lanes/")}):
        src, dst = worktree / rel, dest / rel
        if src.is_file():
            dst.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dst)
        elif not src.exists():
            dst.unlink(missing_ok=True)


def _check(repo: Path, check: list[str], finals: list[LaneRecord]) -> bool:
    """The pass check on the run's work: one lane's worktree, or (a plan, or accepted work) a scratch
    clone of the task's repository with every unaccepted lane's changes laid over it, as if accepted."""
    def run(cwd: Path) -> bool:
        try:
            proc = subprocess.run(filled(check), cwd=cwd, capture_output=True, timeout=TIMEOUT_S, check=False)
        except (OSError, subprocess.TimeoutExpired):
            return False
        return proc.returncode == 0

    if len(finals) == 1 and finals[0].state != "accepted":
        worktree = Path(finals[0].worktree)
        return worktree.is_dir() and run(worktree)
    with tempfile.TemporaryDirectory(prefix="lanes-scorecard-") as tmp:
        scratch = Path(tmp) / "work"
        try:
            _git(["clone", "-q", "--shared", str(repo), str(scratch)], Path(tmp))
            for record in finals:
                if record.state != "accepted" and Path(record.worktree).is_dir():
                    _overlay(record, scratch)
        except (LanesError, OSError, subprocess.TimeoutExpired):
            return False
        return run(scratch)


def _refuse_live(records: list[LaneRecord], repo: Path) -> None:
    live = [r.id for r in records if r.state in LIVE_STATES]
    if live:
        raise LanesError(f"{', '.join(live)} has not finished",
                         f"wait for it: lanes-tui --repo {repo} wait {live[0]} --timeout 600")


def _totals(store: LaneStore, records: list[LaneRecord]) -> dict[str, Any]:
    parts = [_lane_figures(store, r) for r in records]
    wall_s = max(p["end"] for p in parts) - min(p["start"] for p in parts)
    return {"interventions": {k: sum(p[k] for p in parts) for k in ("answers", "sends", "relaunches")},
            "review_rounds": sum(p["review_rounds"] for p in parts),
            "wall_minutes": round(max(wall_s, 0.0) / 60, 4),
            "tokens": sum(p["tokens"] for p in parts), "cost_usd": round(sum(p["cost_usd"] for p in parts), 6)}


def _gates_ok(record: LaneRecord) -> bool:
    return record.result == "OK" and record.state in ("ready", "accepted")


def score_lane(repo: Path, ident: str, check: list[str] | None) -> dict[str, Any]:
    """A lane, followed through the lead's relaunches to the last one, which is the outcome."""
    store = LaneStore(StatePaths(repo))
    chain = _chain(store, ident)
    _refuse_live(chain, repo)
    final = chain[-1]
    passed = _check(repo, check, [final]) if check else _gates_ok(final)
    return {"lane": ident, "lanes": [r.id for r in chain], "state": final.state, "result": final.result,
            "finished": final.result == "OK", "gates_passed": _gates_ok(final), "passed": passed,
            **_totals(store, chain), "attempt": final.attempt, "first_try": passed and len(chain) == 1}


def score_plan(repo: Path, name: str, check: list[str] | None) -> dict[str, Any]:
    """A plan: each ticket's last lane is its outcome; a ticket that never started has not finished."""
    from lanes_tui.engine.plans.state import PlanStore

    store = LaneStore(StatePaths(repo))
    records = [r for r in store.all() if r.plan == name]
    _refuse_live(records, repo)
    tickets = [t.id for t in PlanStore(repo, name).read_plan().plan.tickets]
    finals: list[LaneRecord] = []
    rows = []
    for ticket in tickets:
        mine = sorted((r for r in records if r.ticket == ticket), key=lambda r: (r.attempt, r.created))
        if mine:
            finals.append(mine[-1])
        rows.append({"ticket": ticket, "lane": mine[-1].id if mine else None,
                     "state": mine[-1].state if mine else "not started",
                     "result": mine[-1].result if mine else None, "attempts": len(mine)})
    finished = len(finals) == len(tickets) and all(r.result == "OK" for r in finals)
    gates = finished and all(_gates_ok(r) for r in finals)
    passed = (_check(repo, check, finals) if check and finals else False) if check else gates
    passed = passed and len(finals) == len(tickets)
    totals: dict[str, Any] = _totals(store, records) if records else {
        "interventions": {"answers": 0, "sends": 0, "relaunches": 0}, "review_rounds": 0, "wall_minutes": 0.0,
        "tokens": 0, "cost_usd": 0.0}
    attempt = max((r.attempt for r in records), default=0)
    lead_relaunches = int(totals["interventions"]["relaunches"])
    return {"lane": name, "lanes": sorted(r.id for r in records), "state": "plan", "result": None,
            "finished": finished, "gates_passed": gates, "passed": passed, **totals, "attempt": attempt,
            "first_try": passed and attempt == 1 and lead_relaunches == 0,
            "tickets": rows}


def score(home: Path, ident: str) -> dict[str, Any]:
    """Score a finished run `prepare` started (by lane id, plan name or run id), or a lane or plan of
    this repository (no pass check: the gates decide)."""
    rows = [row for row in prepared_runs(home) if ident in (row.get("lane"), row.get("plan"), row.get("run"))]
    if rows:
        row = rows[-1]
        repo, task = Path(str(row["repo"])), str(row["task"])
        check = [str(a) for a in row["check"]] if isinstance(row.get("check"), list) else None
        ident = str(row.get("lane") or row.get("plan") or ident)
        if not (StatePaths(repo).state).is_dir():
            raise LanesError(f"run {ident}'s repository {repo} is gone", "prepare the task again")
    else:
        repo, task, check = home, ident, None
    store = LaneStore(StatePaths(repo))
    from lanes_tui.engine.plans.state import PlanStore

    if store.exists(ident):
        figures = score_lane(repo, ident, check)
    elif PlanStore(repo, ident).exists():
        figures = score_plan(repo, ident, check)
    else:
        raise LanesError(f"no lane or plan {ident!r} to score",
                         "give the id `scorecard prepare` printed (a lane id or a plan's name)")
    return {"task": task, "repo": str(repo), "run": rows[-1].get("run") if rows else None, **figures}
