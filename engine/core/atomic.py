"""Durable writes: whole files replaced atomically, events appended as JSON lines.

A reader (the dashboard, `status`, a restarted engine) must never see half a state file, so every
whole-file write goes temp file → fsync → `os.replace` → fsync of the directory.
"""

from __future__ import annotations

import contextlib
import json
import os
import tempfile
from pathlib import Path
from typing import Any


def write_bytes_atomic(path: Path, data: bytes) -> None:
    """Replace `path` with `data` so a reader sees the old or the new file, never a mix."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise
    fsync_dir(path.parent)


def write_text_atomic(path: Path, text: str) -> None:
    write_bytes_atomic(path, text.encode("utf-8"))


def write_json_atomic(path: Path, value: Any) -> None:
    write_bytes_atomic(path, (json.dumps(value, indent=2, sort_keys=True) + "\n").encode("utf-8"))


def read_json(path: Path) -> Any:
    """Read a JSON file; raises FileNotFoundError or ValueError (json.JSONDecodeError)."""
    with open(path, encoding="utf-8") as handle:
        return json.load(handle)


def append_jsonl(path: Path, value: Any) -> None:
    """Append one JSON object as one line with a single `write` so lines never interleave."""
    line = (json.dumps(value, sort_keys=True, separators=(",", ":")) + "\n").encode("utf-8")
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        os.write(fd, line)
    finally:
        os.close(fd)


def read_jsonl(path: Path) -> list[Any]:
    """Every complete JSON line of `path`; a torn or garbled line is skipped, not fatal."""
    records: list[Any] = []
    try:
        with open(path, encoding="utf-8", errors="replace") as handle:
            for raw in handle:
                raw = raw.strip()
                if not raw:
                    continue
                try:
                    records.append(json.loads(raw))
                except ValueError:
                    continue
    except FileNotFoundError:
        return []
    return records


def fsync_dir(directory: Path) -> None:
    """Make a rename in `directory` durable (best effort on filesystems that refuse)."""
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)
