"""The writes a confined lane hands to its supervisor (`core.relay`): its questions and its lock events.

The kernel keeps a lane's processes out of the state folder (`lanes.confine`), so the supervisor,
which is lanes-tui's and not confined, writes on their behalf, after three checks:

* the caller is one of this lane's own processes: its pid (`SO_PEERCRED`, from the kernel, not from
  the request) descends from this supervisor, which is the lane's child subreaper, so even a process
  that called `setsid` is still below it — another lane's agent is refused;
* an `inbox-write` makes a question of this lane (the file's `lane` field and folder), or a
  `delivered` / `cancelled` mark of one of its questions: never an answer, which only the lead writes,
  and never a file that exists (the first writer wins, as in `inbox.files`);
* a `lock-event` is one of `lanes.heavy`'s `lock-*` lines, appended to this lane's events only.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

from lanes_tui.engine.core.atomic import append_jsonl
from lanes_tui.engine.inbox.files import FILE_RE, create_json_exclusive, parse_mark, parse_question
from lanes_tui.engine.procs.procfs import read_stat
from lanes_tui.engine.state.lock_events import LOCK_EVENTS

__all__ = ["descends_from", "inbox_write", "lock_event"]

#: The marks a lane's own `ask` writes: it was handed the answer, it gave up waiting, or the question's
#: deadline passed and its default applies (only once the deadline has passed: `_expired_in_time`).
RELAYED_MARKS = ("delivered", "cancelled", "expired")
_MAX_EVENT_BYTES = 16 * 1024


def descends_from(pid: int | None, ancestor: int, *, depth: int = 64) -> bool:
    """True when `pid` is `ancestor` or below it in the process tree (read from /proc, at most
    `depth` steps up)."""
    for _ in range(depth):
        if pid is None or pid <= 1:
            return False
        if pid == ancestor:
            return True
        stat = read_stat(pid)
        pid = stat.ppid if stat is not None else None
    return False


def _refused(error: str, fix: str | None = None) -> dict[str, Any]:
    return {"ok": False, "error": error, **({"fix": fix} if fix else {})}


def inbox_write(inbox_dir: Path, lane: str, body: dict[str, Any]) -> dict[str, Any]:
    """Make one question or mark file of `lane` in `inbox_dir` (this lane's inbox folder)."""
    name, data = body.get("name"), body.get("data")
    match = FILE_RE.match(name) if isinstance(name, str) else None
    if match is None:
        return _refused("not an inbox file name", "a question is q_<hex>.json, a mark q_<hex>.<mark>.json")
    qid, suffix = match.group("qid"), match.group("suffix")
    if suffix is None:
        try:
            parse_question(data, qid=qid, lane=lane)
        except Exception as exc:  # BadFile or LanesError: anything a reader would refuse
            return _refused(f"not a valid question of lane {lane}: {exc}")
    elif suffix in RELAYED_MARKS:
        if not (inbox_dir / f"{qid}.json").is_file():
            return _refused(f"{qid} is not a question of lane {lane}")
        try:
            parse_mark(data, qid=qid)
        except Exception as exc:
            return _refused(f"not a valid {suffix} mark: {exc}")
        if suffix == "expired" and not _deadline_passed(inbox_dir / f"{qid}.json", lane):
            return _refused(f"{qid} has not reached its deadline", "wait for the lead's answer")
    else:
        return _refused(f"a lane may not write {suffix} files", "only the lead answers a question")
    return {"ok": True, "created": create_json_exclusive(inbox_dir / str(name), data)}


def _deadline_passed(path: Path, lane: str) -> bool:
    """True when the question at `path` has a deadline and it has passed (read by lanes-tui, not the lane)."""
    try:
        question = parse_question(json.loads(path.read_text(encoding="utf-8")), qid=path.stem, lane=lane)
    except Exception:
        return False
    return question.deadline is not None and question.deadline <= time.time()


def lock_event(events_file: Path, body: dict[str, Any]) -> dict[str, Any]:
    """Append one `lock-*` line (`lanes.heavy`) to this lane's events."""
    line = body.get("line")
    if not isinstance(line, dict) or line.get("type") not in LOCK_EVENTS:
        return _refused("only lock-* events are relayed")
    if len(json.dumps(line)) > _MAX_EVENT_BYTES:
        return _refused("the event is too large")
    append_jsonl(events_file, {**line, "t": time.time(), "relayed": True})
    return {"ok": True}
