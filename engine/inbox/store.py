"""The inbox store: questions from agents, answers from the lead, as files (INBOX.md).

Layout, one folder per lane under the inbox root (`.lanes/state/inbox/<lane-id>/`):

| file                    | writer                        | content                         |
|-------------------------|-------------------------------|---------------------------------|
| `<qid>.json`            | the asking side               | the question record             |
| `<qid>.answer.json`     | the answering side            | `{id, value, by, at}`           |
| `<qid>.delivered.json`  | the asking side               | `{id, value, at}`               |
| `<qid>.cancelled.json`  | the asking side               | `{id, reason, at}`              |
| `<qid>.expired.json`    | the asking side               | `{id, value, at}` (default)     |
| `<qid>.orphaned.json`   | the engine (the lane died)    | `{id, reason, at}`              |

Every file is created once, atomically and exclusively (the first writer wins), and never rewritten,
so a question never needs a lock. The state is read off which files exist, first match wins:

1. **delivered** — the asker handed the answer to the agent; nothing later can change that.
2. **cancelled** — the asker withdrew the question; an answer that arrived anyway was never used.
3. **expired** — the asker stopped waiting and applied the default; a late answer is ignored.
4. **orphaned** — the lane died before delivery. An answer is still accepted (and shown with this
   state) so the engine can start the next attempt with it; the lane is no longer waiting.
5. **answered** — an answer exists; the asker has not picked it up yet (the lane is still waiting).
6. **open** — only the question exists.

The asker's own marks outrank everything because they record what the agent actually received.
"""

from __future__ import annotations

import builtins
import logging
import math
import os
from collections.abc import Callable, Collection, Mapping, Sequence
from pathlib import Path
from types import MappingProxyType
from typing import Any

from lanes_tui.engine.core.clock import Clock, RealClock
from lanes_tui.engine.core.errors import LanesError
from lanes_tui.engine.core.ids import LANE_ID_RE, validate_lane_id
from lanes_tui.engine.core.relay import relay
from lanes_tui.engine.core.schema import stamped
from lanes_tui.engine.inbox.files import (
    BY_RE,
    FILE_RE,
    KINDS,
    MARKS,
    MAX_BODY_BYTES,
    MAX_MARK_FILE,
    MAX_REASON,
    MAX_RECORD_FILE,
    MAX_TITLE,
    SOURCES,
    STATES,
    Answer,
    BadFile,
    Option,
    Question,
    create_json_exclusive,
    mark_file,
    parse_answer,
    parse_mark,
    parse_question,
    question_file,
    read_json_file,
    validate_qid,
)
from lanes_tui.engine.inbox.options import build_options, normalise_value
from lanes_tui.engine.inbox.view import WAITING_STATES, QuestionView, derive_view, wait_for_answer

__all__ = [
    "KINDS", "SOURCES", "STATES", "WAITING_STATES", "InboxStore", "Option", "Question", "QuestionView",
    "wait_for_answer",
]

_MAX_WARNED = 10_000


#: Makes one inbox file unless it exists (False then): `files.create_json_exclusive`, or a relay.
Create = Callable[[Path, Any], bool]


def relayed_create(state_dir: Path, lane: str) -> Create:
    """A confined lane's way to make its question and mark files: its supervisor writes them
    (`core.relay`, op `inbox-write`), after checking they are its own lane's and not answers."""

    def create(path: Path, value: Any) -> bool:
        reply = relay(state_dir, lane, {"op": "inbox-write", "name": path.name, "data": value})
        return bool(reply.get("created"))

    return create


class InboxStore:
    """Reads and writes the inbox folder; every method is safe to call from any process.

    Reading never trusts the files (agents write into this folder): anything malformed is logged once
    with the file and the reason, then skipped, so `list()` and `lane_is_waiting()` never raise on it.
    """

    def __init__(self, inbox_root: Path, clock: Clock | None = None,
                 logger: logging.Logger | None = None, create: Create | None = None) -> None:
        self.root = Path(inbox_root)
        self.clock: Clock = clock or RealClock()
        self.log = logger or logging.getLogger(__name__)
        self._warned: set[tuple[str, str]] = set()
        #: How a new file (a question, a mark) is made: here, or by the supervisor for a confined
        #: lane's `ask` (`core.relay`), which cannot write the inbox folder itself.
        self.create: Create = create or create_json_exclusive

    # --- asking side ----------------------------------------------------------------------------

    def ask(self, lane: str, *, kind: str, title: str, body: str = "",
            options: Sequence[str | Option] = (), default: str | None = None,
            timeout_s: float | None = None, attempt: int = 1, source: str = "ask-cli",
            correlation: Mapping[str, Any] | None = None) -> Question:
        """Write a new open question and return it; refuses anything a reader would reject."""
        validate_lane_id(lane)
        if kind not in KINDS:
            raise LanesError(f"unknown question kind {kind!r}", f"use one of: {', '.join(KINDS)}")
        if source not in SOURCES:
            raise LanesError(f"unknown question source {source!r}", f"use one of: {', '.join(SOURCES)}")
        if not isinstance(title, str) or not title.strip():
            raise LanesError("a question needs a title", "say what you are asking in one line")
        if len(title) > MAX_TITLE:
            raise LanesError(f"the title is {len(title)} characters long",
                             f"keep it under {MAX_TITLE} and put details in the body")
        if len(body.encode("utf-8", "surrogatepass")) > MAX_BODY_BYTES:
            raise LanesError("the body is larger than 64 KiB", "shorten it or point to a file instead")
        if isinstance(attempt, bool) or not isinstance(attempt, int) or attempt < 1:
            raise LanesError(f"invalid attempt {attempt!r}", "attempts count from 1")
        built = build_options(kind, options)
        if default is not None:
            default = normalise_value(kind, built, default)
        created = self.clock.time()
        deadline: float | None = None
        if timeout_s is not None:
            if not math.isfinite(timeout_s) or timeout_s < 0:
                raise LanesError(f"invalid timeout {timeout_s!r}", "give a number of seconds, 0 or more")
            deadline = created + timeout_s
        for _ in range(5):
            question = Question(
                id="q_" + os.urandom(8).hex(), lane=lane, attempt=attempt, kind=kind, source=source,
                title=title, body=body, options=built, default=default, deadline=deadline,
                correlation=MappingProxyType(dict(correlation or {})), created=created,
            )
            if self.create(question_file(self.root / lane, question.id), stamped(question.to_record(), "question")):
                return question
        raise LanesError("could not pick a free question id", "check the inbox folder is writable")

    def deliver(self, qid: str) -> None:
        """Mark the answer as handed to the agent; a second call is a no-op."""
        view = self.get(qid)
        if view.state == "delivered":
            return
        if view.state not in ("answered", "orphaned") or view.answer is None:
            raise LanesError(f"{qid} is {view.state}", "only an answered question can be delivered")
        self._mark(view, "delivered", {"value": view.answer})

    def cancel(self, qid: str, reason: str) -> None:
        """Withdraw a question that was not delivered (the agent moved on, the prompt vanished)."""
        view = self.get(qid)
        if view.state == "cancelled":
            return
        if view.state in ("delivered", "expired"):
            raise LanesError(f"{qid} is already {view.state}",
                             "only an undelivered question can be cancelled")
        self._mark(view, "cancelled", {"reason": reason[:MAX_REASON]})

    def expire(self, qid: str) -> str | None:
        """Stop waiting and apply the default (deny, i.e. "no", for a permission without one)."""
        view = self.get(qid)
        if view.state != "open":
            raise LanesError(f"{qid} is {view.state}, not open", "read its answer instead of expiring it")
        value = view.question.default
        if value is None and view.question.kind == "permission":
            value = "no"
        self._mark(view, "expired", {"value": value})
        return value

    # --- answering side and engine --------------------------------------------------------------

    def answer(self, qid: str, value: str, *, by: str = "lead") -> str:
        """Record the lead's answer and return it normalised; the first answer wins."""
        view = self.get(qid)
        self._refuse_unless_answerable(view)
        if not isinstance(by, str) or not BY_RE.match(by):
            raise LanesError(f"invalid answerer {by!r}", "use 1-64 letters, digits or '_.:@-'")
        normalised = normalise_value(view.question.kind, view.question.options, value)
        path = mark_file(self.root / view.question.lane, qid, "answer")
        record = {"id": qid, "value": normalised, "by": by, "at": self.clock.time()}
        if not create_json_exclusive(path, stamped(record, "answer")):
            self._refuse_unless_answerable(self.get(qid))
            raise LanesError(f"{qid} already has an answer file that cannot be read",
                             "look at the engine log for the reason")
        after = self.get(qid)
        if after.state not in ("answered", "orphaned", "delivered"):
            raise LanesError(f"{qid} was {after.state} before the answer arrived",
                             "the agent will ask again if it still needs to know")
        return normalised

    def orphan(self, qid: str, reason: str) -> None:
        """Mark an undelivered question of a dead lane; finished questions are left as they are."""
        self._orphan_view(self.get(qid), reason)

    def orphan_lane(self, lane: str, reason: str) -> list[str]:
        """Orphan every open or answered question of `lane`; returns the ids marked now."""
        return [v.question.id for v in self.list(lane, WAITING_STATES) if self._orphan_view(v, reason)]

    # --- reading --------------------------------------------------------------------------------

    def get(self, qid: str) -> QuestionView:
        """One question by id, from whichever lane folder holds it; LanesError if unknown or unreadable."""
        validate_qid(qid)
        for lane, lane_dir in self._lane_dirs():
            path = question_file(lane_dir, qid)
            if not os.path.lexists(path):
                continue
            present = {"question"} | {
                suffix for suffix in ("answer", *MARKS) if os.path.lexists(mark_file(lane_dir, qid, suffix))
            }
            try:
                return self._load(lane, lane_dir, qid, present)
            except FileNotFoundError:
                break
            except (BadFile, OSError) as exc:  # the reason is the message: one line, no log line beside it
                raise LanesError(f"question {qid} cannot be read: {exc}",
                                 "restore or remove the file; `lanes-tui inbox` lists the rest") from None
        raise LanesError(f"no question {qid} in {self.root}", "list the questions with `lanes-tui inbox`")

    def list(self, lane: str | None = None,
             states: Collection[str] | None = None) -> builtins.list[QuestionView]:
        """Every readable question (of one lane, in some states), oldest first; never raises on bad files."""
        if states is not None:
            unknown = set(states) - set(STATES)
            if unknown:
                raise LanesError(f"unknown question state {sorted(unknown)[0]!r}",
                                 f"use one of: {', '.join(STATES)}")
        dirs = [(lane, self.root / validate_lane_id(lane))] if lane is not None else self._lane_dirs()
        views: builtins.list[QuestionView] = []
        for lane_id, lane_dir in dirs:
            for qid, present in self._scan(lane_dir).items():
                if "question" not in present:
                    continue
                try:
                    view = self._load(lane_id, lane_dir, qid, present)
                except FileNotFoundError:
                    continue
                except (BadFile, OSError) as exc:
                    self._warn(question_file(lane_dir, qid), str(exc))
                    continue
                if states is None or view.state in states:
                    views.append(view)
        views.sort(key=lambda v: (v.question.created, v.question.id))
        return views

    def open_questions(self, lane: str) -> builtins.list[QuestionView]:
        return self.list(lane, ("open",))

    def lane_is_waiting(self, lane: str) -> bool:
        """True while a question of `lane` is open or answered but not delivered.

        Called by the watchdog every sample, so it lists one folder and reads only the question
        files with no mark (normally none or one); a malformed question does not count.
        """
        lane_dir = self.root / validate_lane_id(lane)
        for qid, present in self._scan(lane_dir).items():
            if "question" not in present or present.intersection(MARKS):
                continue
            path = question_file(lane_dir, qid)
            try:
                parse_question(read_json_file(path, MAX_RECORD_FILE), qid=qid, lane=lane)
            except FileNotFoundError:
                continue
            except (BadFile, OSError) as exc:
                self._warn(path, str(exc))
                continue
            return True
        return False

    # --- internals ------------------------------------------------------------------------------

    def _refuse_unless_answerable(self, view: QuestionView) -> None:
        qid, state = view.question.id, view.state
        if state == "open" or (state == "orphaned" and view.answer is None):
            return
        if state in ("answered", "orphaned"):
            raise LanesError(f"{qid} is already answered ({view.answer} by {view.answered_by})",
                             "the first answer stands")
        if state == "delivered":
            raise LanesError(f"{qid} was already answered ({view.answer}) and delivered",
                             "ask the agent again if the answer should change")
        if state == "cancelled":
            raise LanesError(f"{qid} was cancelled: {view.reason or 'no reason given'}",
                             "the agent will ask again if it still needs to know")
        raise LanesError(f"{qid} expired and its default ({view.answer}) was applied",
                         "ask the agent again if the answer should change")

    def _mark(self, view: QuestionView, suffix: str, fields: Mapping[str, Any]) -> bool:
        record = {"id": view.question.id, "at": self.clock.time(), **fields}
        path = mark_file(self.root / view.question.lane, view.question.id, suffix)
        return self.create(path, stamped(record, "mark"))

    def _orphan_view(self, view: QuestionView, reason: str) -> bool:
        if view.state not in WAITING_STATES:
            return False
        return self._mark(view, "orphaned", {"reason": reason[:MAX_REASON]})

    def _load(self, lane: str, lane_dir: Path, qid: str, present: Collection[str]) -> QuestionView:
        """Read one question and the one mark that decides its state (see the module docstring)."""
        question = parse_question(read_json_file(question_file(lane_dir, qid), MAX_RECORD_FILE),
                                  qid=qid, lane=lane)
        answer: Answer | None = None
        if "answer" in present:
            path = mark_file(lane_dir, qid, "answer")
            try:
                answer = parse_answer(read_json_file(path, MAX_RECORD_FILE), qid=qid)
            except FileNotFoundError:
                answer = None
            except (BadFile, OSError) as exc:
                self._warn(path, str(exc))
        winner = next((m for m in MARKS if m in present), None)
        mark = self._mark_content(mark_file(lane_dir, qid, winner), qid) if winner is not None else {}
        return derive_view(question, answer, winner, mark)

    def _mark_content(self, path: Path, qid: str) -> Mapping[str, Any]:
        """A mark's fields; unreadable content is logged, the mark still counts by its existence."""
        try:
            return parse_mark(read_json_file(path, MAX_MARK_FILE), qid=qid)
        except FileNotFoundError:
            return {}
        except (BadFile, OSError) as exc:
            self._warn(path, str(exc))
            return {}

    def _lane_dirs(self) -> builtins.list[tuple[str, Path]]:
        try:
            entries = sorted(os.scandir(self.root), key=lambda e: e.name)
        except FileNotFoundError:
            return []
        except OSError as exc:
            self._warn(self.root, f"cannot be listed: {exc.strerror}")
            return []
        dirs: builtins.list[tuple[str, Path]] = []
        for entry in entries:
            if entry.name.startswith("."):
                continue
            path = Path(entry.path)
            if not LANE_ID_RE.match(entry.name):
                self._warn(path, "name is not a lane id")
            elif entry.is_symlink() or not entry.is_dir(follow_symlinks=False):
                self._warn(path, "is not a plain folder")
            else:
                dirs.append((entry.name, path))
        return dirs

    def _scan(self, lane_dir: Path) -> dict[str, set[str]]:
        """qid -> which of its files exist ("question", "answer" and the mark names)."""
        try:
            names = os.listdir(lane_dir)
        except FileNotFoundError:
            return {}
        except OSError as exc:
            self._warn(lane_dir, f"cannot be listed: {exc.strerror}")
            return {}
        found: dict[str, set[str]] = {}
        for name in names:
            if name.startswith("."):
                continue  # temp files of an atomic write in progress
            match = FILE_RE.match(name)
            if match is None:
                self._warn(lane_dir / name, "name is not an inbox file name")
                continue
            found.setdefault(match.group("qid"), set()).add(match.group("suffix") or "question")
        return found

    def _warn(self, path: Path, reason: str) -> None:
        """Log a skipped file once per reason, so a dashboard refreshing every second does not flood."""
        key = (str(path), reason)
        if key in self._warned:
            return
        if len(self._warned) >= _MAX_WARNED:
            self._warned.clear()
        self._warned.add(key)
        self.log.warning("inbox: skipping %s: %s", path, reason)
