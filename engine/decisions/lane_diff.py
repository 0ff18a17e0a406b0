"""`lanes-tui diff ID`: a lane's scoped diff against its base, with a digest per file and one overall.

This is the input a reviewer and the lead's accept check look at: every path that differs between
the lane's `base_sha` and its worktree as it stands (commits on the lane branch, staged, unstaged and
untracked files alike; ignored files not), each with its status as git names it with `--no-renames`
(a rename is its old path deleted and its new path added, as `scope.outside_scope` counts it), its
lines added and removed, a sha256 of its content in the lane, and its unified diff.

Nothing here writes: the worktree is derived and witnessed (`locate_lane` + `working_tree`, never
the path in lane.json), and every git call runs with `--no-optional-locks`, so the lane's index is
not refreshed under an agent that may be running. Every patch comes from one `git diff BASE` (base
commit against the working tree) in a temporary index where the untracked files are intent-to-add
(`git.patches`: the lane's own index is never written), split back per path; a path the split
misses, or every path when that pass fails, gets its own `git diff BASE -- PATH` (or `git diff
--no-index /dev/null FILE` when untracked), which prints the same bytes. Argument lists only.
The text is bounded: past `MAX_DIFF_BYTES` the remaining diffs are cut with a note, while the
digests still cover every file. A file over `git.patches.MAX_SHOWN_BYTES` is never read for its
patch (an agent's 20 GB sparse file held this for minutes): it is shown by its size, "too large to
show", and its digest is bounded (`git.worktrees.describe_path`).
"""

from __future__ import annotations

import hashlib
import os
import stat
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from lanes_tui.engine.config.settings import Config
from lanes_tui.engine.core.errors import LanesError
from lanes_tui.engine.core.sizes import format_bytes
from lanes_tui.engine.decisions.scope import outside_scope
from lanes_tui.engine.git import git_snapshot
from lanes_tui.engine.git.commands import nul_list, refuse_option, run_git
from lanes_tui.engine.git.lane_paths import locate_lane, working_tree
from lanes_tui.engine.git.patches import MAX_SHOWN_BYTES, large_files, one_pass_patches, split_patch, too_large_patch
from lanes_tui.engine.git.worktrees import describe_path
from lanes_tui.engine.state.paths import StatePaths
from lanes_tui.engine.state.store import LaneStore

__all__ = ["MAX_DIFF_BYTES", "FileDiff", "LaneDiff", "diff_digest", "frozen_files", "lane_diff", "work_digest",
           "worktree_files"]

#: The unified diff text kept in all (2 MB); what comes after is cut with a note.
MAX_DIFF_BYTES = 2 * 1024 * 1024
#: git's status letters (with --no-renames there is no R or C) and the words the lead reads.
STATUS_WORDS = {"A": "added", "M": "modified", "D": "deleted", "T": "type-changed", "U": "unmerged"}
#: Global options for every read: take no optional lock (no index refresh), pathspecs are literal.
READ_ONLY = ("--no-optional-locks", "--literal-pathspecs")
DIFF_OPTIONS = ("--no-color", "--no-ext-diff", "--no-textconv", "--no-renames")
#: git calls a file binary when a NUL is in its first 8000 bytes; so do we (`_text_after_all`).
BINARY_SNIFF_BYTES = 8000


@dataclass(frozen=True)
class FileDiff:
    """One changed path: what git calls the change, its size, its content digest and its patch."""

    path: str
    #: `A`, `M`, `D` or `T`, as git's `--name-status` prints it.
    letter: str
    added: int
    removed: int
    #: `sha256:<hex>` of the content in the lane (of the link target for a symlink), or `deleted`.
    digest: str
    #: How the digest saw the path: regular, exec, symlink, dir, other or missing.
    kind: str
    diff: str
    binary: bool = False
    #: The patch was cut (or left out) because the diff passed `MAX_DIFF_BYTES`.
    cut: bool = False
    #: The file is over `MAX_SHOWN_BYTES`: no patch was made, `size` says how big it is.
    too_large: bool = False
    size: int | None = None

    @property
    def status(self) -> str:
        return STATUS_WORDS.get(self.letter, self.letter)

    def to_json(self) -> dict[str, Any]:
        return {"path": self.path, "status": self.status, "added": self.added, "removed": self.removed,
                "digest": self.digest, "kind": self.kind, "binary": self.binary, "cut": self.cut,
                "too_large": self.too_large, "size": self.size, "diff": self.diff}


@dataclass(frozen=True)
class LaneDiff:
    """A lane's changed files against its base, its scope, and one digest over them all."""

    lane: str
    base_sha: str
    worktree: Path
    files: tuple[FileDiff, ...]
    scope: tuple[str, ...] = ()
    outside_scope: tuple[str, ...] = ()
    digest: str = ""
    cut: bool = False
    notes: tuple[str, ...] = field(default=())

    def text(self) -> str:
        """The unified diff of every file, in path order, with the cut note when there is one."""
        return "".join(f.diff for f in self.files) + "".join(f"# {note}\n" for note in self.notes)

    def stat_lines(self) -> list[str]:
        """`M  src/a.py  +3 -1  sha256:abcd1234…` per file, then the totals and the full digest."""
        lines = []
        outside = set(self.outside_scope)
        for f in self.files:
            short = f.digest[:15] + "…" if f.digest.startswith("sha256:") else f.digest
            size = "binary" if f.binary else f"+{f.added} -{f.removed}"
            if f.too_large:
                size = f"too large to show ({format_bytes(f.size or 0)})"
            lines.append(f"{f.letter}  {f.path}  {size}  {short}" + ("  (outside scope)" if f.path in outside else ""))
        total_add, total_rm = sum(f.added for f in self.files), sum(f.removed for f in self.files)
        count = len(self.files)
        lines.append(f"{count} file{'' if count == 1 else 's'}, +{total_add} -{total_rm}, digest {self.digest}")
        if self.scope:
            lines.append(f"scope: {', '.join(self.scope)}; outside it ({len(self.outside_scope)}): "
                         + (", ".join(self.outside_scope) or "none"))
        lines.extend(self.notes)
        return lines

    def to_json(self) -> dict[str, Any]:
        return {"lane": self.lane, "base_sha": self.base_sha, "digest": self.digest, "scope": list(self.scope),
                "files": [f.to_json() for f in self.files], "outside_scope": list(self.outside_scope),
                "cut": self.cut, "notes": list(self.notes)}


def lane_diff(repo: Path, config: Config, lane_id: str, *, max_bytes: int = MAX_DIFF_BYTES,
              frozen: str | None = None) -> LaneDiff:
    """The lane's diff from its verified worktree; refuses (LanesError, one line) a bad or unknown id.

    With `frozen` (the packet's `frozen_sha`), the diff of the work frozen before the gates, base..frozen:
    what the reviewer reads and accept merges, whatever the gates left in the worktree since."""
    record = LaneStore(StatePaths(repo)).read(lane_id)  # validates the id; "no lane" for an unknown one
    location = locate_lane(repo, lane_id, record, default_root=config.lanes.worktree_root)
    worktree = working_tree(location)  # the derived folder, and git must list it on lane/<id>
    git_snapshot.refuse_if_changed(repo, lane_id)  # the shared config, hooks, attributes: as at its start
    base = record.base_sha
    refuse_option(base, "base commit")
    files = frozen_files(worktree, base, frozen, max_bytes=max_bytes) if frozen else \
        worktree_files(worktree, base, max_bytes=max_bytes)
    cut = any(f.cut for f in files)
    size = "2 MB" if max_bytes == MAX_DIFF_BYTES else f"{max_bytes} bytes"
    notes = (f"diff cut at {size}: the digests still cover every file",) if cut else ()
    paths = [f.path for f in files]
    return LaneDiff(lane=lane_id, base_sha=base, worktree=worktree, files=tuple(files), scope=tuple(record.scope),
                    outside_scope=tuple(outside_scope(paths, record.scope)),
                    digest=_overall((f.path, f.kind, f.digest) for f in files), cut=cut, notes=notes)


def worktree_files(worktree: Path, base: str, *, max_bytes: int = MAX_DIFF_BYTES) -> list[FileDiff]:
    """Every changed path of a verified worktree against `base`, in path order, patches cut past
    `max_bytes`; the benchmark (tests/bench/lane_diff.py) times exactly this."""
    changes, untracked = _changes(worktree, base)
    large = large_files(worktree, changes)  # never read, by git or by us: summarised
    try:
        patches = one_pass_patches(worktree, base, sorted(untracked - set(large)), DIFF_OPTIONS, READ_ONLY,
                                   only=sorted(set(changes) - set(large)) if large else None)
    except LanesError:
        patches = {}  # a split index, a file gone meanwhile: one diff per file, as before
    files: list[FileDiff] = []
    budget = max_bytes
    for path in sorted(changes):
        if path in large:
            kind, digest = _file_digest(worktree, path)
            text = too_large_patch(path, large[path]).decode("utf-8", "replace")
            files.append(FileDiff(path=path, letter=changes[path], added=0, removed=0, digest=digest, kind=kind,
                                  diff=text, too_large=True, size=large[path]))
            budget -= len(text.encode("utf-8", "replace"))
            continue
        item = _file_diff(worktree, base, path, changes[path], budget, untracked=path in untracked,
                          patch=patches.get(path))
        budget -= len(item.diff.encode("utf-8", "replace"))
        files.append(item)
    return files


def diff_digest(worktree: Path, base: str) -> str:
    """The overall digest alone, without a patch: what a review and a verification are tied to, and
    what accept compares them with. `worktree` must be the derived, verified one."""
    refuse_option(base, "base commit")
    changes, _ = _changes(worktree, base)
    return _overall((path, *_file_digest(worktree, path)) for path in sorted(changes))


def work_digest(worktree: Path, base: str, frozen: str | None) -> str:
    """The digest a review and a verification are tied to: of the frozen work when the packet has one
    (`frozen_sha`), else of the worktree as it stands. Equal to `diff_digest` when the gates left nothing."""
    if not frozen:
        return diff_digest(worktree, base)
    refuse_option(base, "base commit")
    refuse_option(frozen, "frozen commit")
    entries = _frozen_entries(worktree, base, frozen)
    return _overall((path, kind, digest) for path, (_letter, kind, digest, _size) in sorted(entries.items()))


#: A tree entry's mode → the kind `describe_path` gives the same file in a worktree.
_MODE_KINDS = {"100644": "regular", "100755": "exec", "120000": "symlink", "160000": "other"}


def _frozen_entries(worktree: Path, base: str, frozen: str) -> dict[str, tuple[str, str, str, int]]:
    """Path → (letter, kind, digest, size) of every path base..frozen changes; digests as the worktree's
    (`sha256:` of the content), so a review of frozen work equals one of the same files in a worktree."""
    raw = nul_list(run_git(worktree, "diff-tree", "-r", "-z", "--no-renames", base, frozen, "--").stdout)
    found: dict[str, tuple[str, str]] = {}  # path → (letter, new mode + oid)
    for head, path in zip(raw[0::2], raw[1::2], strict=False):
        _old_mode, new_mode, _old, new, letter = head.lstrip(":").split(" ")[:5]
        found[path] = (letter[:1], f"{new_mode} {new}")
    oids = sorted({v.split(" ")[1] for letter, v in found.values() if letter != "D"})
    blobs: dict[str, bytes] = {}
    if oids:
        out = run_git(worktree, "cat-file", "--batch", stdin="".join(o + "\n" for o in oids).encode()).stdout
        at = 0
        while at < len(out):
            end = out.index(b"\n", at)
            parts = out[at:end].decode().split(" ")
            if len(parts) != 3:  # `<oid> missing`: no content, an empty digest
                at = end + 1
                continue
            size = int(parts[2])
            blobs[parts[0]] = out[end + 1:end + 1 + size]
            at = end + 1 + size + 1
    entries = {}
    for path, (letter, value) in found.items():
        mode, oid = value.split(" ")
        if letter == "D":
            entries[path] = (letter, "missing", "deleted", 0)
            continue
        kind = _MODE_KINDS.get(mode, "other")
        content = blobs.get(oid, b"")
        digest = "sha256:" + hashlib.sha256(content).hexdigest() if kind in ("regular", "exec", "symlink") else kind
        entries[path] = (letter, kind, digest, len(content))
    return entries


def frozen_files(worktree: Path, base: str, frozen: str, *, max_bytes: int = MAX_DIFF_BYTES) -> list[FileDiff]:
    """`worktree_files` of the frozen work: base..frozen, commit against commit, patches cut past `max_bytes`."""
    refuse_option(frozen, "frozen commit")
    entries = _frozen_entries(worktree, base, frozen)
    large = {p for p, (_l, _k, _d, size) in entries.items() if size > MAX_SHOWN_BYTES}
    shown = sorted(set(entries) - large)
    patches: dict[str, bytes] = {}
    for start in range(0, len(shown), 500):
        proc = run_git(worktree, *READ_ONLY, "-c", "core.quotePath=true", "diff", *DIFF_OPTIONS, base, frozen, "--",
                       *shown[start:start + 500])
        patches.update(split_patch(proc.stdout))
    files: list[FileDiff] = []
    budget = max_bytes
    for path in sorted(entries):
        letter, kind, digest, size = entries[path]
        if path in large:
            text = too_large_patch(path, size).decode("utf-8", "replace")
            files.append(FileDiff(path=path, letter=letter, added=0, removed=0, digest=digest, kind=kind, diff=text,
                                  too_large=True, size=size))
        else:
            out = patches.get(path, b"")
            if b"\nBinary files " in b"\n" + out and kind in ("regular", "exec") \
                    and b"\0" not in _frozen_head(worktree, frozen, path):  # an attribute said binary, not a NUL
                out = run_git(worktree, *READ_ONLY, "diff", *DIFF_OPTIONS, "--text", base, frozen, "--", path).stdout
            added, removed, binary = _count(out.decode("utf-8", "replace"))
            text, cut = _bounded(out, path, budget)
            files.append(FileDiff(path=path, letter=letter, added=added, removed=removed, digest=digest, kind=kind,
                                  diff=text, binary=binary, cut=cut))
        budget -= len(files[-1].diff.encode("utf-8", "replace"))
    return files


def _frozen_head(worktree: Path, frozen: str, path: str) -> bytes:
    """The first bytes of a file as the frozen work holds it (git's binary sniff looks at as many)."""
    proc = run_git(worktree, "cat-file", "blob", f"{frozen}:{path}", check=False)
    return proc.stdout[:BINARY_SNIFF_BYTES]


def _bounded(out: bytes, path: str, budget: int) -> tuple[str, bool]:
    """A patch's text, cut with a note when it passes what is left of the budget."""
    if len(out) <= budget:
        return out.decode("utf-8", "replace"), False
    text = out[:max(budget, 0)].decode("utf-8", "ignore")
    return (text if text.endswith("\n") or not text else text + "\n") + f"# diff of {path} cut here\n", True


def _overall(items: Iterable[tuple[str, str, str]]) -> str:
    """One sha256 over (path, kind, digest) of every changed file, in path order."""
    outer = hashlib.sha256()
    for path, kind, digest in items:
        outer.update(os.fsencode(path) + b"\0" + kind.encode() + b"\0" + digest.encode() + b"\n")
    return "sha256:" + outer.hexdigest()


def _changes(worktree: Path, base: str) -> tuple[dict[str, str], set[str]]:
    """Path → status letter of every changed path (untracked ones as `A`), and the untracked set."""
    changes = _tracked(worktree, base)
    untracked = set(_untracked(worktree))
    for path in untracked:
        changes.setdefault(path, "A")
    return changes, untracked


def _file_digest(worktree: Path, path: str) -> tuple[str, str]:
    """(kind, digest) of a path in the lane: `sha256:…` of its content, `deleted`, or its kind."""
    kind, content = describe_path(worktree, worktree / path)
    return kind, "deleted" if kind == "missing" else ("sha256:" + content.decode() if content else kind)


def _tracked(worktree: Path, base: str) -> dict[str, str]:
    """Path → status letter for every tracked path that differs between `base` and the working tree."""
    proc = run_git(worktree, *READ_ONLY, "diff", "--name-status", "-z", *DIFF_OPTIONS, base, "--")
    items = nul_list(proc.stdout)
    return {path: letter[:1] for letter, path in zip(items[0::2], items[1::2], strict=False)}


def _untracked(worktree: Path) -> list[str]:
    proc = run_git(worktree, *READ_ONLY, "ls-files", "--others", "--exclude-standard", "-z")
    return nul_list(proc.stdout)


def _file_diff(worktree: Path, base: str, path: str, letter: str, budget: int, *, untracked: bool,
               patch: bytes | None = None) -> FileDiff:
    """One path's FileDiff, from its part of the one-pass patch or, without one, its own git diff."""
    kind, digest = _file_digest(worktree, path)
    text_too = ("--text",) if _text_after_all(worktree, path) else ()
    if patch is not None and not (text_too and b"\nBinary files " in b"\n" + patch):
        out = patch
    elif untracked and letter == "A" and kind != "missing":
        out = run_git(worktree, *READ_ONLY, "diff", "--no-index", *DIFF_OPTIONS, *text_too, "--", "/dev/null", path,
                      check=False).stdout  # exits 1 when the files differ, which they do
    else:
        out = run_git(worktree, *READ_ONLY, "diff", *DIFF_OPTIONS, *text_too, base, "--", path).stdout
    text = out.decode("utf-8", "replace")
    added, removed, binary = _count(text)
    cut = False
    if len(out) > budget:
        keep = max(budget, 0)
        text = out[:keep].decode("utf-8", "ignore")
        text = (text if text.endswith("\n") or not text else text + "\n") + f"# diff of {path} cut here\n"
        cut = True
    return FileDiff(path=path, letter=letter, added=added, removed=removed, digest=digest, kind=kind, diff=text,
                    binary=binary, cut=cut)


def _text_after_all(worktree: Path, path: str) -> bool:
    """The lane's file has no NUL where git looks: if git still calls it binary, an attribute did (`-diff`,
    `binary`, which the lane can write), and the reviewer gets its text (`--text`) instead."""
    try:
        if not stat.S_ISREG((worktree / path).lstat().st_mode):
            return False  # a link, a FIFO: never opened
        with (worktree / path).open("rb") as handle:
            head = handle.read(BINARY_SNIFF_BYTES)
    except OSError:
        return False  # deleted, a folder, unreadable: git's own verdict stands
    return b"\0" not in head


def _count(patch: str) -> tuple[int, int, bool]:
    """Lines added and removed in a patch (headers skipped), and whether git called it binary."""
    added = removed = 0
    binary = False
    in_header = True
    for line in patch.splitlines():
        if line.startswith("diff --git "):
            in_header = True
        elif in_header:
            if line.startswith("@@"):
                in_header = False
            elif line.startswith("Binary files ") or line == "GIT binary patch":
                binary = True
        elif line.startswith("+"):
            added += 1
        elif line.startswith("-"):
            removed += 1
    return added, removed, binary
