"""One `git diff` for a lane's tracked and untracked changes, split back into per-path patches.

A lane can hold thousands of new files, and one `git diff --no-index /dev/null FILE` per file cost
about 3 ms each on the dashboard's refresh path (1.3 s for 400). Instead the new files are marked
intent-to-add (`git add -N`) in a *temporary* index, a copy of the worktree's own (so the stat cache
still spares git from hashing every tracked file), and a single `git diff BASE` prints every patch:
for a new file git prints exactly the bytes `--no-index` printed. The lane's own index is never
written (`GIT_INDEX_FILE` points into a temporary folder), and every git call keeps `run_git`'s
timeout, so the pass is bounded in time.

The one patch is split at its `diff --git ` lines (no content line can start so: each carries a
` `, `+`, `-` or `\\` prefix); the path comes from that header, C-quoted by git when it holds a
control character, a quote, a backslash or a non-ASCII byte (`core.quotePath` is pinned). A path
whose header cannot be read is simply missing from the result, and callers diff it on its own.

A changed file over `MAX_SHOWN_BYTES` is never given to git at all (issue 28): git reads a file whole
to diff it, so an agent's 20 GB sparse file held `lanes-tui diff` and the dashboard's diff view for
minutes. `large_files` finds them by `lstat` alone, the pass is limited to the other paths (`only`),
and `too_large_patch` stands in for each one: its size and "too large to show".
"""

from __future__ import annotations

import os
import shutil
import stat
import tempfile
from collections.abc import Iterable, Sequence
from pathlib import Path

from lanes_tui.engine.git.commands import run_git

__all__ = ["MAX_SHOWN_BYTES", "large_files", "one_pass_patches", "split_patch", "too_large_patch"]

#: A changed file larger than this is summarised in a diff (its size), never read by git or us.
MAX_SHOWN_BYTES = 8 * 1024 * 1024
#: Paths given to one `git diff` at most: well under the kernel's argument limit.
_PATHS_PER_DIFF = 2000


def large_files(worktree: Path, paths: Iterable[str], limit: int = MAX_SHOWN_BYTES) -> dict[str, int]:
    """Path -> size of each regular file of `paths` in the worktree larger than `limit` (no link followed)."""
    found: dict[str, int] = {}
    for path in paths:
        try:
            info = os.lstat(worktree / path)
        except (OSError, ValueError):
            continue
        if stat.S_ISREG(info.st_mode) and info.st_size > limit:
            found[path] = info.st_size
    return found


def too_large_patch(path: str, size: int) -> bytes:
    """What a diff shows for a file over the limit: its header and its size, never its content."""
    return os.fsencode(f"diff --git a/{path} b/{path}\n# {path}: {size} bytes, too large to show\n")

_HEADER = b"diff --git "
_ESCAPES = {ord("a"): 7, ord("b"): 8, ord("t"): 9, ord("n"): 10, ord("v"): 11, ord("f"): 12, ord("r"): 13,
            ord('"'): 34, ord("\\"): 92}


def one_pass_patches(worktree: Path, base: str, untracked: Sequence[str], options: Sequence[str],
                     global_options: Sequence[str] = (), *, only: Sequence[str] | None = None) -> dict[str, bytes]:
    """Path → its patch against `base` (tracked paths and the `untracked` ones alike), from one diff
    (limited to the paths `only`, when given: a few diffs of at most `_PATHS_PER_DIFF` paths each).

    Raises LanesError when git refuses (a split index, a file gone between the listing and the add);
    the caller then falls back to one diff per file."""
    if only is not None and not only:
        return {}
    with tempfile.TemporaryDirectory(prefix="lanes-diff-index-") as tmp:
        index = Path(tmp) / "index"
        env = {"GIT_INDEX_FILE": str(index)}
        own = run_git(worktree, "rev-parse", "--path-format=absolute", "--git-path", "index").stdout
        own_index = Path(os.fsdecode(own.strip()))
        if own_index.is_file():
            shutil.copyfile(own_index, index)
        else:
            run_git(worktree, "read-tree", "HEAD", extra_env=env)
        if untracked:
            listing = b"".join(os.fsencode(path) + b"\0" for path in untracked)
            run_git(worktree, *global_options, "add", "--intent-to-add", "--pathspec-from-file=-",
                    "--pathspec-file-nul", stdin=listing, extra_env=env)
        found: dict[str, bytes] = {}
        if only is None:
            proc = run_git(worktree, *global_options, "-c", "core.quotePath=true", "diff", *options, base, "--",
                           extra_env=env)
            return split_patch(proc.stdout)
        for start in range(0, len(only), _PATHS_PER_DIFF):  # names, never patterns: a file called `*`
            proc = run_git(worktree, *global_options, "--literal-pathspecs", "-c", "core.quotePath=true", "diff",
                           *options, base, "--", *only[start:start + _PATHS_PER_DIFF], extra_env=env)
            found.update(split_patch(proc.stdout))
    return found


def split_patch(data: bytes) -> dict[str, bytes]:
    """Path → the part of a `--no-renames` patch that is about it (a type change prints two parts)."""
    parts: dict[str, bytes] = {}
    starts = [0] if data.startswith(_HEADER) else []
    at = data.find(b"\n" + _HEADER)
    while at >= 0:
        starts.append(at + 1)
        at = data.find(b"\n" + _HEADER, at + 1)
    for i, start in enumerate(starts):
        end = starts[i + 1] if i + 1 < len(starts) else len(data)
        chunk = data[start:end]
        path = _header_path(chunk[len(_HEADER):chunk.find(b"\n") if b"\n" in chunk else len(chunk)])
        if path is not None:
            parts[path] = parts.get(path, b"") + chunk
    return parts


def _header_path(rest: bytes) -> str | None:
    """The path of `a/P b/P` or `"a/Q" "b/Q"` (both sides equal without renames), or None."""
    if rest.startswith(b'"'):
        half = len(rest) // 2
        left, right = rest[:half], rest[half + 1:]
        if rest[half:half + 1] != b" " or not left.startswith(b'"a/') or not left.endswith(b'"') \
                or right != b'"b/' + left[3:]:
            return None
        raw = _unquote(left[3:-1])
    else:
        if len(rest) % 2 == 0:
            return None
        half = len(rest) // 2
        left, right = rest[:half], rest[half + 1:]
        if not left.startswith(b"a/") or right != b"b/" + left[2:]:
            return None
        raw = left[2:]
    return None if raw is None else os.fsdecode(raw)


def _unquote(body: bytes) -> bytes | None:
    """git's C-style quoting undone: `\\t`, `\\"`, `\\\\` and three-digit octal bytes."""
    out = bytearray()
    i = 0
    while i < len(body):
        byte = body[i]
        if byte != 0x5C:
            out.append(byte)
            i += 1
            continue
        nxt = body[i + 1:i + 2]
        if nxt and nxt[0] in _ESCAPES:
            out.append(_ESCAPES[nxt[0]])
            i += 2
        elif len(body) >= i + 4 and body[i + 1:i + 4].isdigit():
            out.append(int(body[i + 1:i + 4], 8) & 0xFF)
            i += 4
        else:
            return None
    return bytes(out)

