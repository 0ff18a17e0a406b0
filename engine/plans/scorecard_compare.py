"""The scorecard's records, baselines and pass bar: `scorecard record`, `baseline`, `compare`.

Why JSON lines under the state folder: a record is appended once and never rewritten, so the
history of runs stays for the lead to read. Two records of one task under one label are both kept;
the newer one is the task's figure for `baseline` and `compare` (latest wins), and `record` says
which record it replaced. A baseline is a copy of those newest records under a name, kept apart so
later runs cannot move it.

The pass bar (`compare`) fails a task when, against the baseline, it is missing; stopped finishing,
passing or passing at the first try; needed the lead more often (answers + sends + relaunches);
went through more review rounds; or its tokens, cost or wall time grew past `factor` times the
baseline's (with a little slack, so a sim task of seconds and cents does not fail on noise). Each
failure names its metric (`regressed`), so a script knows what got worse.
"""

from __future__ import annotations

import re
import time
from pathlib import Path
from typing import Any

from lanes_tui.engine.core.atomic import append_jsonl, read_json, read_jsonl, write_json_atomic
from lanes_tui.engine.core.errors import LanesError
from lanes_tui.engine.plans.scorecard import scorecard_dir
from lanes_tui.engine.plans.scorecard_score import score

__all__ = ["COST_SLACK_USD", "TIME_SLACK_MIN", "TOKEN_SLACK", "check_label", "compare", "latest", "record",
           "records_path", "save_baseline", "score"]

RECORDS_FILE = "records.jsonl"
_LABEL_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")
#: Slack added to `factor` x baseline, so tiny figures (a sim task's seconds and cents) are not noise-failed.
TIME_SLACK_MIN = 0.5
COST_SLACK_USD = 0.01
TOKEN_SLACK = 1000
_KINDS = ("answers", "sends", "relaunches")


def check_label(label: str) -> str:
    """A label or baseline name names a file (`baselines/NAME.json`): a plain name only."""
    if not _LABEL_RE.match(label):
        raise LanesError(f"label {label!r} is not a plain name", "use letters, digits, '.', '_' or '-'")
    return label


def record(home: Path, ident: str, label: str) -> dict[str, Any]:
    """Score `ident` and append the record under `label`; `replaces` names the record of the same
    task and label it takes over from (both stay in the file; the newer one counts)."""
    check_label(label)
    figures = score(home, ident)
    before = latest(home, label).get(figures["task"])
    replaces = ({"lane": before.get("lane"), "run": before.get("run"), "recorded": before.get("recorded")}
                if before else None)
    entry = {"label": label, "recorded": time.time(), **figures, "replaces": replaces}
    append_jsonl(records_path(home), entry)
    return entry


def latest(home: Path, label: str | None = None) -> dict[str, dict[str, Any]]:
    """The newest record of each task (of one label, or of all)."""
    found: dict[str, dict[str, Any]] = {}
    for row in read_jsonl(records_path(home)):
        if isinstance(row, dict) and isinstance(row.get("task"), str) and (label is None or row.get("label") == label):
            found[row["task"]] = row
    return found


def _baseline_path(home: Path, name: str) -> Path:
    return scorecard_dir(home) / "baselines" / f"{check_label(name)}.json"


def save_baseline(home: Path, name: str, label: str | None = None) -> dict[str, dict[str, Any]]:
    """Store the newest records (of `label`, default: the records labelled `name`) as baseline `name`."""
    rows = latest(home, check_label(label) if label else name)
    if not rows:
        raise LanesError(f"no records labelled {label or name!r} to make a baseline of",
                         f"record runs first: lanes-tui scorecard record ID --label {label or name}")
    path = _baseline_path(home, name)
    path.parent.mkdir(parents=True, exist_ok=True)
    write_json_atomic(path, {"name": name, "saved": time.time(), "tasks": rows})
    return rows


def _load_baseline(home: Path, name: str) -> dict[str, dict[str, Any]]:
    path = _baseline_path(home, name)
    try:
        stored = read_json(path)
    except FileNotFoundError:
        raise LanesError(f"no baseline {name!r}",
                         f"save one from recorded runs: lanes-tui scorecard baseline {name}") from None
    except (ValueError, OSError) as exc:
        raise LanesError(f"baseline {path} cannot be read: {exc}", "save it again") from None
    base = stored.get("tasks") if isinstance(stored, dict) else None
    if not isinstance(base, dict) or not all(isinstance(v, dict) for v in base.values()):
        raise LanesError(f"baseline {path} has no tasks", "save it again")
    return base


def compare(home: Path, name: str, *, label: str | None = None, factor: float = 1.5) -> dict[str, Any]:
    """The newest records (of `label`, or any) against baseline `name`; `ok` is the pass bar."""
    if not factor >= 1.0:
        raise LanesError(f"--factor {factor:g} is below 1", "give 1 or more (1.5: half as much again is allowed)")
    base = _load_baseline(home, name)
    now = latest(home, check_label(label) if label else None)
    tasks = []
    for task, before in sorted(base.items()):
        after = now.get(task)
        worse = _worse(before, after, factor) if after is not None else [("record", "no record now")]
        regressed, problems = [m for m, _ in worse], [p for _, p in worse]
        tasks.append({"task": task, "ok": not problems, "regressed": regressed, "problems": problems,
                      "baseline": before, "now": after})
    return {"baseline": name, "label": label, "factor": factor, "ok": all(t["ok"] for t in tasks), "tasks": tasks}


def _worse(before: dict[str, Any], after: dict[str, Any], factor: float) -> list[tuple[str, str]]:
    """(metric, why) for each way `after` is worse than `before`."""
    found = [(key, f"{what} in the baseline, not now")
             for key, what in (("finished", "finished"), ("passed", "passed"), ("first_try", "passed at the first try"))
             if before.get(key) is True and after.get(key) is not True]
    if ("passed", "passed in the baseline, not now") in found:  # no first try is the same news
        found = [f for f in found if f[0] != "first_try"]
    old, new = _interventions(before), _interventions(after)
    if sum(new.values()) > sum(old.values()):
        detail = ", ".join(f"{k} {old[k]} → {new[k]}" for k in _KINDS if new[k] != old[k])
        found.append(("interventions", f"the lead stepped in {sum(new.values())} times, {sum(old.values())} "
                                       f"in the baseline ({detail})"))
    if _number(after.get("review_rounds")) > _number(before.get("review_rounds")):
        found.append(("review_rounds", f"review rounds {_number(after.get('review_rounds')):g} > "
                                       f"{_number(before.get('review_rounds')):g}"))
    for key, what, slack in (("tokens", "tokens", TOKEN_SLACK), ("cost_usd", "cost", COST_SLACK_USD),
                             ("wall_minutes", "wall time", TIME_SLACK_MIN)):
        was, now = _number(before.get(key)), _number(after.get(key))
        if now > was * factor + slack:
            found.append((key, f"{what} {now:g} > {factor:g} x {was:g} (+{slack:g})"))
    return found


def _interventions(row: dict[str, Any]) -> dict[str, int]:
    raw = row.get("interventions")
    raw = raw if isinstance(raw, dict) else {}
    return {k: int(_number(raw.get(k))) for k in _KINDS}


def _number(value: Any) -> float:
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else 0.0


def records_path(home: Path) -> Path:
    """Where the records are (`scorecard/records.jsonl` in the state folder): read by tests and scripts."""
    return scorecard_dir(home) / RECORDS_FILE
