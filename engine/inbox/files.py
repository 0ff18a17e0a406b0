"""The inbox's files: names, limits, safe reading, exclusive writing and validation (INBOX.md).

Everything under `.lanes/state/inbox/` may have been written by an agent in a lane, so nothing read
from it is trusted: names are matched against strict patterns before they become paths, files are
opened without following symlinks and without blocking on FIFOs, sizes are capped before parsing,
and every field is type-checked. A file that fails any check raises `BadFile` with the reason, which
the store logs and skips; it never takes the dashboard or the watchdog down.
"""

from __future__ import annotations

import contextlib
import errno
import json
import math
import os
import re
import stat
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType
from typing import Any

from lanes_tui.engine.core.atomic import MAX_JSON_DEPTH, fsync_dir, nested_deeper, temp_beside
from lanes_tui.engine.core.errors import LanesError
from lanes_tui.engine.core.ids import LANE_ID_RE
from lanes_tui.engine.core.schema import check_schema

KINDS = ("yesno", "choice", "text", "permission")
SOURCES = ("ask-cli", "claude-stdio", "codex-appserver", "pty")
#: Marks written after the question, in the order of precedence when deriving the state.
MARKS = ("delivered", "cancelled", "expired", "orphaned")
#: Every state a question can be in; the precedence is explained in `inbox.store`.
STATES = ("open", "answered", "delivered", "cancelled", "expired", "orphaned")

QID_RE = re.compile(r"^q_[0-9a-f]{12,64}\Z")
OPTION_ID_RE = re.compile(r"^[A-Za-z0-9_.:-]{1,64}\Z")
BY_RE = re.compile(r"^[A-Za-z0-9_.:@-]{1,64}\Z")
#: `<qid>.json` is the question; `<qid>.<suffix>.json` the answer and the marks.
FILE_RE = re.compile(
    r"^(?P<qid>q_[0-9a-f]{12,64})(?:\.(?P<suffix>answer|delivered|cancelled|expired|orphaned))?\.json\Z"
)

MAX_TITLE = 500
MAX_BODY_BYTES = 64 * 1024
MAX_VALUE_BYTES = 64 * 1024
MAX_OPTIONS = 50
MAX_LABEL = 500
MAX_REASON = 2000
#: JSON escaping can make a 64 KiB body several times larger on disk; anything beyond this is hostile.
MAX_RECORD_FILE = 1024 * 1024
MAX_MARK_FILE = 64 * 1024

YES_WORDS = frozenset({"yes", "y", "allow", "true"})
NO_WORDS = frozenset({"no", "n", "deny", "false"})


class BadFile(Exception):
    """An inbox file that cannot be trusted; the message is the reason, logged with the file name."""


@dataclass(frozen=True)
class Option:
    """One answer a choice question offers: `id` is what the asker gets back, `label` what the lead reads."""

    id: str
    label: str


@dataclass(frozen=True)
class Question:
    """A question as written once, atomically, by the side that asks; never changed afterwards."""

    id: str
    lane: str
    attempt: int
    kind: str
    source: str
    title: str
    body: str
    options: tuple[Option, ...]
    default: str | None
    deadline: float | None
    correlation: Mapping[str, Any]
    created: float

    def to_record(self) -> dict[str, Any]:
        """The JSON object of `<qid>.json` (INBOX.md, "A question on disk")."""
        return {
            "id": self.id,
            "lane": self.lane,
            "attempt": self.attempt,
            "kind": self.kind,
            "source": self.source,
            "title": self.title,
            "body": self.body,
            "options": [{"id": o.id, "label": o.label} for o in self.options],
            "default": self.default,
            "deadline": self.deadline,
            "correlation": dict(self.correlation),
            "created": self.created,
        }


@dataclass(frozen=True)
class Answer:
    """The content of `<qid>.answer.json`."""

    value: str
    by: str
    at: float


def question_file(lane_dir: Path, qid: str) -> Path:
    return lane_dir / f"{validate_qid(qid)}.json"


def mark_file(lane_dir: Path, qid: str, suffix: str) -> Path:
    """`<qid>.answer.json`, `<qid>.delivered.json`, …; the suffix is one of a fixed set."""
    if suffix not in ("answer", *MARKS):
        raise ValueError(f"unknown inbox file suffix {suffix!r}")
    return lane_dir / f"{validate_qid(qid)}.{suffix}.json"


def validate_qid(qid: str) -> str:
    """Return `qid` unchanged, or refuse it: a question id becomes a file name, so only `q_<hex>` passes."""
    if not isinstance(qid, str) or not QID_RE.match(qid):
        raise LanesError(f"invalid question id {qid!r}", "question ids look like q_0123456789ab")
    return qid


# --- reading -------------------------------------------------------------------------------------


def read_json_file(path: Path, limit: int) -> Any:
    """Parse a small JSON file without following a symlink or blocking on a FIFO.

    Raises FileNotFoundError if it is gone (a reader may race a writer's cleanup), BadFile otherwise.
    """
    flags = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0)
    try:
        fd = os.open(path, flags)
    except FileNotFoundError:
        raise
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise BadFile("is a symlink (refused so a link cannot point the inbox elsewhere)") from None
        raise BadFile(f"cannot be opened: {exc.strerror}") from None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise BadFile("is not a regular file")
        if info.st_size > limit:
            raise BadFile(f"is {info.st_size} bytes, more than the limit of {limit}")
        chunks: list[bytes] = []
        size = 0
        while size <= limit:
            chunk = os.read(fd, 65536)
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
        if size > limit:
            raise BadFile(f"grew past the limit of {limit} bytes while being read")
    finally:
        os.close(fd)
    try:
        value = json.loads(b"".join(chunks).decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError) as exc:
        raise BadFile(f"is not valid JSON ({str(exc)[:80]})") from None
    if nested_deeper(value, MAX_JSON_DEPTH):  # `inbox --json` and every writer would recurse past the limit
        raise BadFile(f"is nested more than {MAX_JSON_DEPTH} levels deep")
    return value


def _str(record: Mapping[str, Any], key: str, *, limit: int | None = None, nullable: bool = False) -> Any:
    value = record.get(key)
    if value is None and nullable:
        return None
    if not isinstance(value, str):
        raise BadFile(f"field {key!r} is not a string")
    if limit is not None and len(value) > limit:
        raise BadFile(f"field {key!r} is longer than {limit} characters")
    return value


def _number(record: Mapping[str, Any], key: str, *, nullable: bool = False) -> float | None:
    value = record.get(key)
    if value is None and nullable:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float) or not _finite(value):
        raise BadFile(f"field {key!r} is not a finite number")
    return float(value)


def _finite(value: float) -> bool:
    try:
        return math.isfinite(value)
    except OverflowError:  # an integer no float can hold
        return False


def _object(raw: Any) -> Mapping[str, Any]:
    if not isinstance(raw, dict):
        raise BadFile("is not a JSON object")
    return raw


def parse_question(raw: Any, *, qid: str, lane: str) -> Question:
    """Validate a question record read from `<lane>/<qid>.json`; the id and lane must match the path."""
    record = _object(raw)
    _schema(record, "question", f"question {qid}")
    rid = _str(record, "id", limit=80)
    if not QID_RE.match(rid):
        raise BadFile(f"id {rid[:80]!r} is not a question id")
    if rid != qid:
        raise BadFile(f"id {rid!r} does not match the file name")
    rlane = _str(record, "lane", limit=80)
    if not LANE_ID_RE.match(rlane) or rlane != lane:
        raise BadFile(f"lane {rlane[:80]!r} does not match the folder {lane!r}")
    attempt = record.get("attempt")
    if isinstance(attempt, bool) or not isinstance(attempt, int) or attempt < 1:
        raise BadFile("field 'attempt' is not a positive integer")
    kind = _str(record, "kind", limit=20)
    if kind not in KINDS:
        raise BadFile(f"kind {kind!r} is not one of {', '.join(KINDS)}")
    source = _str(record, "source", limit=40)
    if source not in SOURCES:
        raise BadFile(f"source {source!r} is not one of {', '.join(SOURCES)}")
    title = _str(record, "title", limit=MAX_TITLE)
    body = _str(record, "body")
    if len(body.encode("utf-8", "surrogatepass")) > MAX_BODY_BYTES:
        raise BadFile(f"body is larger than {MAX_BODY_BYTES} bytes")
    raw_options = record.get("options", [])
    if not isinstance(raw_options, list) or len(raw_options) > MAX_OPTIONS:
        raise BadFile(f"field 'options' is not a list of at most {MAX_OPTIONS}")
    options: list[Option] = []
    for item in raw_options:
        entry = _object(item)
        oid = _str(entry, "id", limit=64)
        if not OPTION_ID_RE.match(oid):
            raise BadFile(f"option id {oid!r} is not allowed")
        options.append(Option(oid, _str(entry, "label", limit=MAX_LABEL)))
    if len({o.id for o in options}) != len(options):
        raise BadFile("option ids are not unique")
    correlation = record.get("correlation", {})
    if correlation is None:
        correlation = {}
    if not isinstance(correlation, dict):
        raise BadFile("field 'correlation' is not an object")
    return Question(
        id=rid,
        lane=rlane,
        attempt=attempt,
        kind=kind,
        source=source,
        title=title,
        body=body,
        options=tuple(options),
        default=_str(record, "default", limit=MAX_VALUE_BYTES, nullable=True),
        deadline=_number(record, "deadline", nullable=True),
        correlation=MappingProxyType(dict(correlation)),
        created=_number(record, "created") or 0.0,
    )


def parse_answer(raw: Any, *, qid: str) -> Answer:
    record = _object(raw)
    _schema(record, "answer", f"the answer to {qid}")
    _check_id(record, qid, required=True)
    value = _str(record, "value", limit=MAX_VALUE_BYTES)
    by = _str(record, "by", limit=64)
    return Answer(value=value, by=by, at=_number(record, "at") or 0.0)


def parse_mark(raw: Any, *, qid: str) -> Mapping[str, Any]:
    """A mark's content (`reason`, `value`, `at`); its existence alone decides the state."""
    record = _object(raw)
    _schema(record, "mark", f"a mark of {qid}")
    _check_id(record, qid, required=False)
    reason = _str(record, "reason", limit=MAX_REASON, nullable=True)
    value = _str(record, "value", limit=MAX_VALUE_BYTES, nullable=True)
    at = _number(record, "at", nullable=True)
    return {"reason": reason, "value": value, "at": at}


def _schema(record: Mapping[str, Any], kind: str, what: str) -> None:
    """A file of a newer lanes-tui (or a damaged version) is a bad file: its reason says which."""
    try:
        check_schema(record, kind, what)
    except LanesError as exc:
        raise BadFile(str(exc)) from None


def _check_id(record: Mapping[str, Any], qid: str, *, required: bool) -> None:
    if "id" not in record and not required:
        return
    rid = record.get("id")
    if rid != qid:
        shown = rid[:80] if isinstance(rid, str) else rid
        raise BadFile(f"id {shown!r} does not match the file name")


# --- writing -------------------------------------------------------------------------------------


def create_json_exclusive(path: Path, value: Any) -> bool:
    """Write `path` atomically unless it already exists; False if it did (the first writer wins).

    The content is written to a temp file and fsynced, then hard-linked into place: `link` fails if
    the name exists, so two answerers racing (dashboard and `lanes-tui answer`) cannot both succeed
    and a reader never sees a partial file.
    """
    data = (json.dumps(value, indent=2, sort_keys=True) + "\n").encode("utf-8")
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)  # a lane's questions are the lead's alone
    fd, tmp = temp_beside(path)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        try:
            os.link(tmp, path)
        except FileExistsError:
            return False
        except OSError:
            # A filesystem without hard links: check, then replace (a narrow race, still atomic).
            if os.path.lexists(path):
                return False
            os.replace(tmp, path)
    finally:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
    fsync_dir(path.parent)
    return True
