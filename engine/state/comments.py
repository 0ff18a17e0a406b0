"""The lead's comments on a hunk of a lane's diff, kept for the lane's next attempt.

A comment on a running lane goes to its agent at once (`decisions.comment`); one on a lane that has
ended waits here, in the lane folder's `comments.json`, until the lane is relaunched: the next
attempt's prompt carries it in its findings (`decisions.recover`), and the comments it carried are
dropped from the file then. Each comment keeps its context (the file, the hunk header and the hunk's
lines, bounded), so it still reads right after the worktree has moved on.

Like `allow.json`, the file sits where an agent of the same user could write: it is read as
untrusted (bounded, entry by entry, anything malformed skipped) and written whole, atomically,
under an flock so the dashboard and the command line never lose each other's comment.
"""

from __future__ import annotations

import contextlib
import logging
import uuid
from collections.abc import Iterable
from dataclasses import asdict, dataclass
from pathlib import Path

from lanes_tui.engine.core.atomic import append_jsonl, write_json_atomic
from lanes_tui.engine.core.clock import Clock, RealClock
from lanes_tui.engine.core.entry_files import locked, read_entries
from lanes_tui.engine.core.errors import LanesError

__all__ = ["COMMENTS_FILE", "MAX_COMMENT_BYTES", "HunkComment", "drop_comments", "keep_comment", "new_comment",
           "read_comments"]

log = logging.getLogger(__name__)

COMMENTS_FILE = "comments.json"
MAX_COMMENTS_FILE = 1 << 20
MAX_COMMENTS = 100
#: One comment's text: a review remark, not a log (a log belongs in `recover --note-file`).
MAX_COMMENT_BYTES = 8 * 1024
#: The hunk's lines a comment keeps as context, and how much of each.
MAX_HUNK_LINES = 40
MAX_LINE_CHARS = 300
MAX_PATH_CHARS = 1000


@dataclass(frozen=True)
class HunkComment:
    """A comment on one hunk: where (`file`, the `@@` `header`), what it saw (`lines`), what it says."""

    file: str
    header: str
    lines: tuple[str, ...]
    text: str
    id: str = ""
    at: float = 0.0
    by: str = "lead"

    @property
    def where(self) -> str:
        return f"{self.file} {self.header}".strip()

    def message(self) -> str:
        """The message a conversation agent gets: the place, the hunk as it saw it, the comment."""
        hunk = "\n".join(f"    {line}" for line in self.lines)
        return (f"The lead commented on a hunk of your diff, {self.where}:\n{hunk}\n"
                f"The lead's comment: {self.text}")

    def one_line(self) -> str:
        """For a terminal agent, which takes one line at a time: the changed lines, joined."""
        changed = [line for line in self.lines if line[:1] in ("+", "-")] or list(self.lines)
        context = " | ".join(changed)
        if len(context) > MAX_LINE_CHARS:
            context = context[:MAX_LINE_CHARS] + "…"
        text = " ".join(self.text.split())
        return f"The lead commented on {self.where} [{context}]: {text}"

    def finding_lines(self) -> list[str]:
        """The comment in a relaunch's findings (each line is quoted there by `Findings.prompt_block`)."""
        return [f"On {self.where}:", *(f"    {line}" for line in self.lines), *self.text.splitlines()]


def new_comment(file: str, header: str, lines: Iterable[str], text: str, *, clock: Clock | None = None,
                by: str = "lead") -> HunkComment:
    """A checked comment: its text is not empty, not too large, holds no NUL; its context is bounded."""
    text = text.strip()
    if not text:
        raise LanesError("the comment is empty", "write what the agent should change in that hunk")
    size = len(text.encode("utf-8", "surrogateescape"))
    if size > MAX_COMMENT_BYTES:
        raise LanesError(f"the comment has {size:,} bytes, more than {MAX_COMMENT_BYTES:,}",
                         "keep it to the hunk; a longer brief goes in `lanes-tui recover ID --relaunch --note-file F`")
    if "\x00" in text or "\x00" in file or "\x00" in header:
        raise LanesError("the comment contains NUL bytes", "give plain text")
    if not file.strip():
        raise LanesError("the comment names no file", "give the file of the hunk (FILE:LINE)")
    kept = [_cut(line.rstrip("\r\n")) for line in lines][:MAX_HUNK_LINES]
    return HunkComment(file[:MAX_PATH_CHARS], _cut(header), tuple(kept), text, uuid.uuid4().hex[:12],
                       (clock or RealClock()).time(), by)


def _cut(line: str) -> str:
    return line if len(line) <= MAX_LINE_CHARS else line[:MAX_LINE_CHARS] + "…"


def read_comments(lane_dir: Path) -> list[HunkComment]:
    """The lane's kept comments, oldest first; a missing, oversized or malformed file keeps none."""
    path = lane_dir / COMMENTS_FILE
    out: list[HunkComment] = []
    for entry in read_entries(path, "comments", MAX_COMMENTS_FILE):
        comment = _comment(entry)
        if comment is None:
            log.warning("ignoring a malformed comment in %s: %.200r", path, entry)
        else:
            out.append(comment)
    return out[:MAX_COMMENTS]


def _comment(entry: object) -> HunkComment | None:
    if not isinstance(entry, dict):
        return None
    file, header, text, cid, by = (entry.get(k) for k in ("file", "header", "text", "id", "by"))
    lines, at = entry.get("lines"), entry.get("at")
    if not all(isinstance(v, str) for v in (file, header, text, cid)) or not isinstance(lines, list):
        return None
    if not all(isinstance(line, str) for line in lines):
        return None
    when = float(at) if isinstance(at, int | float) and not isinstance(at, bool) else 0.0
    return HunkComment(str(file)[:MAX_PATH_CHARS], _cut(str(header)), tuple(_cut(x) for x in lines[:MAX_HUNK_LINES]),
                       str(text)[:MAX_COMMENT_BYTES], str(cid), when, by if isinstance(by, str) else "?")


def keep_comment(lane_dir: Path, comment: HunkComment) -> list[HunkComment]:
    """Add `comment` to the lane's kept ones (and its events); returns them all, oldest first."""
    if not (lane_dir / "lane.json").exists():
        raise LanesError(f"no lane folder {lane_dir}", "see `lanes-tui status` for the lanes")
    with _locked(lane_dir):
        comments = read_comments(lane_dir)
        if len(comments) >= MAX_COMMENTS:
            raise LanesError(f"the lane keeps {MAX_COMMENTS} comments already",
                             "relaunch it to hand them over (`lanes-tui recover ID --relaunch`)")
        comments.append(comment)
        write_json_atomic(lane_dir / COMMENTS_FILE, {"comments": [asdict(c) for c in comments]})
    append_jsonl(lane_dir / "events.jsonl", {"t": comment.at, "type": "comment-kept", "id": comment.id,
                                             "file": comment.file, "header": comment.header,
                                             "text": comment.text[:2000], "by": comment.by})
    return comments


def drop_comments(lane_dir: Path, ids: Iterable[str]) -> int:
    """Remove the comments a relaunch carried (by id: one kept meanwhile stays); how many went."""
    gone = set(ids)
    if not gone:
        return 0
    with _locked(lane_dir):
        comments = read_comments(lane_dir)
        left = [c for c in comments if c.id not in gone]
        if len(left) == len(comments):
            return 0
        if left:
            write_json_atomic(lane_dir / COMMENTS_FILE, {"comments": [asdict(c) for c in left]})
        else:
            with contextlib.suppress(FileNotFoundError):
                (lane_dir / COMMENTS_FILE).unlink()
    return len(comments) - len(left)


def _locked(lane_dir: Path) -> contextlib.AbstractContextManager[None]:
    """One writer of `COMMENTS_FILE` at a time."""
    return locked(lane_dir / ".comments.lock")
