"""The scorecard's records, baselines and pass bar: `scorecard record`, `baseline`, `compare`.

Why JSON lines under the state folder: a record is appended once and never rewritten, so the
history of runs stays for the lead to read, and `compare` takes the newest record of each task.
A baseline is a copy of those newest records under a name, kept apart so later runs cannot move it.

The pass bar (`compare`) fails when a task that passed in the baseline is missing or fails now, or
when its cost or wall time grew past `factor` times the baseline's (with a little slack, so a sim
task of seconds does not fail on noise). More interventions or review rounds are shown, not failed:
a lead who answers a question is not a regression by itself.
"""

from __future__ import annotations

import re
import time
from pathlib import Path
from typing import Any

from lanes_tui.engine.core.atomic import append_jsonl, read_json, read_jsonl, write_json_atomic
from lanes_tui.engine.core.errors import LanesError
from lanes_tui.engine.plans.scorecard import score, scorecard_dir

RECORDS_FILE = "records.jsonl"
_LABEL_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")
#: Slack added to `factor` x baseline, so tiny figures (a sim task's seconds and cents) are not noise-failed.
TIME_SLACK_MIN = 0.5
COST_SLACK_USD = 0.01


def check_label(label: str) -> str:
    if not _LABEL_RE.match(label):
        raise LanesError(f"label {label!r} is not a plain name", "use letters, digits, '.', '_' or '-'")
    return label


def record(home: Path, ident: str, label: str) -> dict[str, Any]:
    """Score `ident` and append the record under `label`."""
    entry = {"label": check_label(label), "recorded": time.time(), **score(home, ident)}
    append_jsonl(scorecard_dir(home) / RECORDS_FILE, entry)
    return entry


def latest(home: Path, label: str | None = None) -> dict[str, dict[str, Any]]:
    """The newest record of each task (of one label, or of all)."""
    found: dict[str, dict[str, Any]] = {}
    for row in read_jsonl(scorecard_dir(home) / RECORDS_FILE):
        if isinstance(row, dict) and isinstance(row.get("task"), str) and (label is None or row.get("label") == label):
            found[row["task"]] = row
    return found


def _baseline_path(home: Path, name: str) -> Path:
    return scorecard_dir(home) / "baselines" / f"{check_label(name)}.json"


def save_baseline(home: Path, name: str, label: str | None = None) -> dict[str, dict[str, Any]]:
    """Store the newest records (of `label`, default: the records labelled `name`) as baseline `name`."""
    rows = latest(home, label or name)
    if not rows:
        raise LanesError(f"no records labelled {label or name!r} to make a baseline of",
                         "record runs first: lanes-tui scorecard record ID --label NAME")
    path = _baseline_path(home, name)
    path.parent.mkdir(parents=True, exist_ok=True)
    write_json_atomic(path, {"name": name, "saved": time.time(), "tasks": rows})
    return rows


def compare(home: Path, name: str, *, label: str | None = None, factor: float = 1.5) -> dict[str, Any]:
    """The newest records (of `label`, or any) against baseline `name`; `ok` is the pass bar."""
    path = _baseline_path(home, name)
    try:
        stored = read_json(path)
    except FileNotFoundError:
        raise LanesError(f"no baseline {name!r}", f"save one: lanes-tui scorecard baseline {name}") from None
    except ValueError as exc:
        raise LanesError(f"baseline {path} is not valid JSON: {exc}", "save it again") from exc
    base = stored.get("tasks") if isinstance(stored, dict) else None
    if not isinstance(base, dict):
        raise LanesError(f"baseline {path} has no tasks", "save it again")
    now = latest(home, label)
    tasks = []
    for task, before in sorted(base.items()):
        after = now.get(task)
        problems: list[str] = []
        if after is None:
            problems.append("no record now")
        else:
            if before.get("passed") and not after.get("passed"):
                problems.append("passed in the baseline, fails now")
            problems += _grew(before, after, "cost_usd", factor, COST_SLACK_USD, "cost")
            problems += _grew(before, after, "wall_minutes", factor, TIME_SLACK_MIN, "wall time")
        tasks.append({"task": task, "ok": not problems, "problems": problems, "baseline": before, "now": after})
    return {"baseline": name, "label": label, "factor": factor, "ok": all(t["ok"] for t in tasks), "tasks": tasks}


def _grew(before: dict[str, Any], after: dict[str, Any], key: str, factor: float, slack: float,
          what: str) -> list[str]:
    old, new = _number(before.get(key)), _number(after.get(key))
    if new > old * factor + slack:
        return [f"{what} {new:g} > {factor:g} x {old:g} (+{slack:g})"]
    return []


def _number(value: Any) -> float:
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else 0.0


def records_path(home: Path) -> Path:
    """Where the records are (`scorecard/records.jsonl` in the state folder): read by tests and scripts."""
    return scorecard_dir(home) / RECORDS_FILE
