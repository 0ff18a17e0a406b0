"""Questions across nodes: a Ray lane's inbox files travel to the lead's inbox, the lead's answers back.

A lane on a node asks exactly as a local lane does (`lanes-tui ask`, or its supervisor for a
structured channel): the question lands in the node clone's `.lanes/state/inbox/<lane>/`. The lead
answers in his own inbox (the dashboard's `y` / `n`, `lanes-tui answer`), which the Ray runner's
`sync` relays: node files to the lead, answer files to the node, in one call to the lane's actor.

INBOX.md gives every file one writer, and the relay keeps it so: the asking side (on the node)
writes the question and its marks (`delivered`, `cancelled`, `expired`, `orphaned`), the lead writes
`<qid>.answer.json`. So files written on the node are copied to the lead and never back; an answer
is copied to the node only, and only once (exclusively: the first answer there wins, as locally).
Names are checked against the inbox's own pattern and sizes are capped on both sides: a node is a
machine the lead does not watch, and an agent on it may write anything into that folder.
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path

from lanes_tui.engine.core.atomic import write_bytes_atomic
from lanes_tui.engine.inbox.files import FILE_RE

__all__ = ["MAX_FILES", "MAX_FILE_BYTES", "lead_answers", "node_files", "take_answers", "take_node_files"]

#: A question is at most 64 KiB of body (`inbox.files.MAX_BODY_BYTES`) plus its fields.
MAX_FILE_BYTES = 256 * 1024
#: Files relayed per lane and call; a lane with more open questions than this is misbehaving.
MAX_FILES = 400


def _files(folder: Path, *, answers: bool) -> dict[str, bytes]:
    """The inbox files of one lane folder that pass the inbox's name pattern: the answers, or the rest."""
    found: dict[str, bytes] = {}
    try:
        names = sorted(entry.name for entry in folder.iterdir() if entry.is_file() and not entry.is_symlink())
    except OSError:  # no folder yet: nothing asked
        return found
    for name in names:
        match = FILE_RE.match(name)
        if match is None or (match["suffix"] == "answer") != answers:
            continue
        with contextlib.suppress(OSError):
            data = (folder / name).read_bytes()
            if len(data) <= MAX_FILE_BYTES:
                found[name] = data
        if len(found) >= MAX_FILES:
            break
    return found


def node_files(folder: Path) -> dict[str, bytes]:
    """On the node: the lane's questions and their marks (not the answers: those are the lead's)."""
    return _files(folder, answers=False)


def lead_answers(folder: Path) -> dict[str, bytes]:
    """On the lead's machine: the answers whose question the node has not yet marked delivered."""
    return {name: data for name, data in _files(folder, answers=True).items()
            if not (folder / name.replace(".answer.json", ".delivered.json")).exists()}


def take_answers(folder: Path, answers: dict[str, bytes]) -> list[str]:
    """On the node: write the lead's answers to questions asked there, each only if none is there yet."""
    written = []
    for name, data in answers.items():
        match = FILE_RE.match(name) if isinstance(name, str) else None
        if match is None or match["suffix"] != "answer" or not isinstance(data, bytes) or len(data) > MAX_FILE_BYTES:
            continue
        if not (folder / f"{match['qid']}.json").is_file():  # an answer to nothing asked here
            continue
        target = folder / name
        tmp = folder / f".{name}.relay"
        try:
            write_bytes_atomic(tmp, data)
            os.link(tmp, target)  # exclusive: fails if an answer is there already
            written.append(name)
        except FileExistsError:  # answered there already: the first answer stands
            pass
        finally:
            with contextlib.suppress(OSError):
                tmp.unlink()
    return written


def take_node_files(folder: Path, files: dict[str, bytes]) -> list[str]:
    """On the lead's machine: copy the node's questions and marks in; never an answer, never a bad name."""
    changed = []
    for name, data in list(files.items())[:MAX_FILES]:
        match = FILE_RE.match(name) if isinstance(name, str) else None
        if match is None or match["suffix"] == "answer" or not isinstance(data, bytes) or len(data) > MAX_FILE_BYTES:
            continue
        path = folder / name
        with contextlib.suppress(OSError):
            if path.read_bytes() == data:
                continue
        folder.mkdir(parents=True, exist_ok=True, mode=0o700)
        write_bytes_atomic(path, data)
        changed.append(name)
    return changed

