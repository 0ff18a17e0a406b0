"""The sim's review mode: a simulated reviewer of another lane's diff, for the demo and the review tests.

When a prompt's first non-empty line starts with `REVIEW_MARKER` (the first line of the engine's
review prompt, `decisions.review.prompt`), the sim runs no steps: the `## Task` section of such a
prompt quotes the reviewed lane's own prompt, and those steps must not run a second time. Instead it
reads the fenced diff of the `## Diff` section and blocks every added line that carries `BUG` or
`FIXME` as a word, so a test or the demo decides a verdict by what a lane writes, and the verdict
runs through the same parser a real reviewer's answer does.

Same import budget as the sim (standard library only, and here nothing at all): the engine's copy of
the marker lives in `decisions.review.prompt`, which the sim may not import; a test keeps them equal.
"""

from __future__ import annotations

TYPE_CHECKING = False  # not `typing` at run time: the import budget above (mypy reads this as true)
if TYPE_CHECKING:
    from collections.abc import Callable

__all__ = ["MARKS", "REVIEW_MARKER", "is_review_request", "review", "review_findings"]

#: The first line of a review prompt starts with this (`lanes-tui review request: lane ID`).
REVIEW_MARKER = "lanes-tui review request"
#: Words that make an added line a blocking finding.
MARKS = ("BUG", "FIXME")
#: A finding quotes at most this much of the added line.
QUOTE_CHARS = 80


def is_review_request(text: str) -> bool:
    """True when the prompt's first non-empty line starts with the review marker."""
    for line in text.splitlines():
        if line.strip():
            return line.lstrip().startswith(REVIEW_MARKER)
    return False


def diff_lines(text: str) -> list[str]:
    """The lines between the ```` ```diff ```` fence after the last `## Diff` heading and its closing fence.

    The last heading, because the `## Task` before it quotes the lane's prompt, which may hold any
    heading; no diff line is one (each starts with a marker: `+`, `-`, space, `@`, `\\`, or a header
    word), and a context line starts with a space. For the same reason the first bare fence closes it.
    """
    lines = text.splitlines()
    try:
        start = next(i for i in range(len(lines) - 1, -1, -1) if lines[i].rstrip() == "## Diff")
        opening = next(i for i in range(start + 1, len(lines)) if lines[i].startswith("```"))
    except StopIteration:
        return []
    out: list[str] = []
    for line in lines[opening + 1:]:
        if line.rstrip() == "```":
            break
        out.append(line)
    return out


def review_findings(diff: list[str]) -> tuple[list[str], int, int, list[str]]:
    """(files, lines added, lines removed, findings) of a unified diff (`git diff` format).

    Hunks are followed by their `@@ -a,b +c,d @@` counts, so an added line whose own text starts with
    `++` is still an added line, and the `---`/`+++` headers of the next file are never read as lines.
    """
    files: list[str] = []
    findings: list[str] = []
    added = removed = 0
    path = "?"
    new_line = old_left = new_left = 0
    for line in diff:
        if old_left > 0 or new_left > 0:  # inside a hunk
            kind, body = line[:1], line[1:]
            if kind == "+":
                added += 1
                new_left -= 1
                if _marked(body):
                    findings.append(f"- {path}:{new_line}: added line is marked BUG/FIXME: {_quote(body)}")
                new_line += 1
            elif kind == "-":
                removed += 1
                old_left -= 1
            elif kind in (" ", ""):
                old_left -= 1
                new_left -= 1
                new_line += 1
            continue  # `\ No newline at end of file` counts for neither side
        if line.startswith("diff --git "):
            path = _unquote(line.rpartition(" b/")[2]) if " b/" in line else line.split()[-1]
            files.append(path)
        elif line.startswith("+++ ") and line[4:].strip() != "/dev/null":
            path = _unquote(line[4:].strip()).removeprefix("b/")
        elif line.startswith("@@"):
            new_line, old_left, new_left = _hunk(line)
    return files, added, removed, findings


def review(text: str, emit: Callable[[str], None]) -> int:
    """Review the prompt's diff: progress lines, the findings, then `REVIEW: BLOCKING` or `REVIEW: CLEAN`."""
    first = next((line.strip() for line in text.splitlines() if line.strip()), "")
    emit(f"sim: {first}")
    diff = diff_lines(text)
    if not diff:
        emit("sim: no ```diff section under ## Diff: nothing to review")
    files, added, removed, findings = review_findings(diff)
    emit(f"sim: reviewing {len(files)} file{'' if len(files) == 1 else 's'}, +{added} -{removed}")
    emit(f"sim: looking for {' and '.join(MARKS)} in the added lines")
    for finding in findings:
        emit(finding)
    emit("REVIEW: BLOCKING" if findings else "REVIEW: CLEAN")
    return 0


def _hunk(header: str) -> tuple[int, int, int]:
    """(first new line, old count, new count) of `@@ -a,b +c,d @@ …`; a missing count is 1."""
    try:
        old, new = header.split("@@")[1].split()
        old_count = int(old.partition(",")[2] or 1)
        start, _, count = new.lstrip("+").partition(",")
        return int(start), old_count, int(count or 1)
    except (IndexError, ValueError):
        return 0, 0, 0  # not a hunk header after all: read on as headers


def _marked(body: str) -> bool:
    """`BUG` or `FIXME` as a word (so `DEBUG` and `BUGS_URL` are not findings)."""
    for mark in MARKS:
        at = body.find(mark)
        while at >= 0:
            before = body[at - 1] if at else " "
            after = body[at + len(mark)] if at + len(mark) < len(body) else " "
            if not (before.isalnum() or before == "_" or after.isalnum() or after == "_"):
                return True
            at = body.find(mark, at + 1)
    return False


def _quote(body: str) -> str:
    line = " ".join(body.split())
    return line if len(line) <= QUOTE_CHARS else line[:QUOTE_CHARS - 1] + "…"


def _unquote(path: str) -> str:
    """git quotes a path with unusual characters (`"b/sp ace\\tx"`); the sim only needs it readable."""
    return path[1:-1] if len(path) >= 2 and path[0] == path[-1] == '"' else path
