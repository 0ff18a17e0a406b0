"""Durable writes: whole files replaced atomically, events appended as JSON lines.

A reader (the dashboard, `status`, a restarted engine) must never see half a state file, so every
whole-file write goes temp file → fsync → `os.replace` → fsync of the directory.

Modes: state files hold prompts, agent output and answers, so a new file is the lead's alone (0600,
its new folder 0700) unless the caller asks otherwise; a file that already exists keeps its mode,
so a tracked `.lanes/config.toml` at 0644 stays 0644 after an edit (the temp file would be 0600).
"""

from __future__ import annotations

import contextlib
import json
import os
import stat
from pathlib import Path
from typing import Any

#: The mode of a new state file and of a folder created for one.
PRIVATE_FILE = 0o600
PRIVATE_DIR = 0o700
#: Lists and objects inside each other, at most, in JSON read back. No state file comes near it, and
#: every writer (`json.dumps`, `dataclasses.asdict`) recurses once or more per level: a deeper value
#: read from a hand-edited file would raise RecursionError later, far from the file.
MAX_JSON_DEPTH = 64


def temp_beside(path: Path) -> tuple[int, str]:
    """A new, empty, private file next to `path` (`.NAME.RANDOM.tmp`), open for writing: (fd, its path).

    `tempfile.mkstemp` does the same, but `tempfile` pulls in `shutil` and `random` (1.3 MB of RSS in
    each lane's supervisor, which writes its state through here: issue 15, B3). Like mkstemp, the name
    is created exclusively (never an existing file or a planted symlink) and retried on a collision.
    """
    flags = os.O_RDWR | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
    for _ in range(100):
        name = str(path.parent / f".{path.name}.{os.urandom(6).hex()}.tmp")
        try:
            return os.open(name, flags, PRIVATE_FILE), name
        except FileExistsError:
            continue
    raise FileExistsError(f"no free temporary name next to {path}")


def write_bytes_atomic(path: Path, data: bytes, *, mode: int | None = PRIVATE_FILE) -> None:
    """Replace `path` with `data` so a reader sees the old or the new file, never a mix.

    An existing file keeps its mode; a new one gets `mode` (None: what `open` would give, 0666 less
    the umask — for files the lead owns and may track, like the config).
    """
    private = mode is not None and not mode & 0o077
    path.parent.mkdir(parents=True, exist_ok=True, mode=PRIVATE_DIR if private else 0o777)
    try:
        keep = stat.S_IMODE(os.stat(path).st_mode)
    except OSError:
        keep = mode if mode is not None else 0o666 & ~_umask()
    try:
        fd, tmp = temp_beside(path)
    except OSError as exc:
        raise named_error(exc, path) from exc
    try:
        os.fchmod(fd, keep)
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException as exc:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        if isinstance(exc, OSError):
            raise named_error(exc, path) from exc
        raise
    fsync_dir(path.parent)


def write_text_atomic(path: Path, text: str, *, mode: int | None = PRIVATE_FILE) -> None:
    write_bytes_atomic(path, text.encode("utf-8"), mode=mode)


def write_json_atomic(path: Path, value: Any) -> None:
    write_bytes_atomic(path, (json.dumps(value, indent=2, sort_keys=True) + "\n").encode("utf-8"))


def read_json(path: Path) -> Any:
    """Read a JSON file; raises FileNotFoundError or ValueError (json.JSONDecodeError, or nested too deeply)."""
    with open(path, encoding="utf-8") as handle:
        try:
            value = json.load(handle)
        except RecursionError:  # `[[[[…` deeper than the decoder's own stack
            raise ValueError(f"JSON nested more than {MAX_JSON_DEPTH} levels deep") from None
    if nested_deeper(value, MAX_JSON_DEPTH):
        raise ValueError(f"JSON nested more than {MAX_JSON_DEPTH} levels deep")
    return value


def nested_deeper(value: Any, limit: int) -> bool:
    """Does `value` hold more than `limit` lists and objects inside each other? (Level by level: no recursion.)"""
    level = [value]
    for _ in range(limit):
        level = [child for item in level if isinstance(item, list | dict)
                 for child in (item.values() if isinstance(item, dict) else item)]
        if not level:
            return False
    return any(isinstance(item, list | dict) for item in level)


def append_jsonl(path: Path, value: Any) -> None:
    """Append one JSON object as one line with a single `write` so lines never interleave."""
    line = (json.dumps(value, sort_keys=True, separators=(",", ":")) + "\n").encode("utf-8")
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, PRIVATE_FILE)
    try:
        os.write(fd, line)
    except OSError as exc:
        raise named_error(exc, path) from exc
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
                except (ValueError, RecursionError):
                    continue
    except FileNotFoundError:
        return []
    return records


def private_opener(path: str, flags: int) -> int:
    """`open(path, "ab", opener=private_opener)`: a file created 0600, as a lane's output.log must be."""
    return os.open(path, flags, PRIVATE_FILE)


def _umask() -> int:
    """The process umask, read without changing it where Linux allows (`os.umask` sets it to read it)."""
    try:
        with open("/proc/self/status", encoding="ascii") as handle:
            for line in handle:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError, IndexError):
        pass
    current = os.umask(0o022)
    os.umask(current)
    return current


def named_error(exc: OSError, path: Path) -> OSError:
    """`exc` naming the state file it was about (not a temp file, not nothing: `os.write` names none),
    so "No space left on device" or "Permission denied" tells the lead where."""
    if exc.errno is None:
        return exc
    return type(exc)(exc.errno, exc.strerror, str(path))


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
