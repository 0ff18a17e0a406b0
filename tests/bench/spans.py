"""lanes-tui's own share of a launch or an accept: timed spans, and every git command timed apart (B5, B6).

While a `Spans` is open, `subprocess.run` is wrapped so that each git command's wall time is added up
(`git_s`, `git_calls`), and each named function is wrapped so that its wall time and the git time
spent inside it are kept (`spans`). What lanes-tui itself adds to a launch or an accept is then the
whole call's time minus its git commands: `own_s`. The spans overlap (a span's time includes the
spans it calls); they say where the own time goes, they do not add up to it.

Only the benchmark process is timed: the fork server's and the supervisor's own git (a lane's start,
its freeze before the gates) run in other processes and are not in `git_s`.
"""

from __future__ import annotations

import functools
import os
import subprocess
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any


@dataclass
class Span:
    calls: int = 0
    wall_s: float = 0.0
    git_s: float = 0.0


@dataclass
class Taken:
    """One timed call: its wall time, its git time, and the spans inside it."""

    wall_s: float
    git_s: float
    git_calls: int
    spans: dict[str, Span] = field(default_factory=dict)
    #: Each git command as it ran: its first words and its ms (which calls there are, and what each costs).
    commands: list[tuple[str, float]] = field(default_factory=list)

    @property
    def own_s(self) -> float:
        return self.wall_s - self.git_s

    def as_json(self) -> dict[str, Any]:
        return {"wall_ms": 1000 * self.wall_s, "git_ms": 1000 * self.git_s, "git_calls": self.git_calls,
                "own_ms": 1000 * self.own_s,
                "spans": {name: {"calls": s.calls, "wall_ms": 1000 * s.wall_s, "git_ms": 1000 * s.git_s,
                                 "own_ms": 1000 * (s.wall_s - s.git_s)} for name, s in self.spans.items()},
                "commands": [[words, ms] for words, ms in self.commands]}


def _is_git(args: Any) -> bool:
    argv = args[0] if args else None
    if isinstance(argv, (list, tuple)) and argv:
        return os.path.basename(os.fsdecode(argv[0])) == "git"
    return False


def _words(argv: Any) -> str:
    """A git command's subcommand and its next two words, without `-c` settings: enough to know it."""
    words: list[str] = []
    skip = False
    for word in (os.fsdecode(w) for w in list(argv)[1:]):
        if skip:
            skip = False
        elif word in ("-c", "-C"):
            skip = True
        elif not words and word.startswith("--"):
            continue
        else:
            words.append(word)
        if len(words) == 3:
            break
    return " ".join(words)


class Spans:
    """Wraps `subprocess.run` and the named functions (`(owner, attribute, name)`) while open."""

    def __init__(self, targets: Sequence[tuple[Any, str, str]]) -> None:
        self.targets = list(targets)
        self._saved: list[tuple[Any, str, Any]] = []
        self._lock = threading.Lock()
        self._active: list[Span] = []
        self._current: Taken | None = None
        self._run: Callable[..., Any] = subprocess.run

    def __enter__(self) -> Spans:
        self._run = subprocess.run
        self._patch(subprocess, "run", self._timed_run)
        for owner, attribute, name in self.targets:
            if hasattr(owner, attribute):  # a step an older commit does not have: the same script times both
                self._patch(owner, attribute, self._wrap(getattr(owner, attribute), name))
        return self

    def __exit__(self, *exc: object) -> None:
        for owner, attribute, original in reversed(self._saved):
            setattr(owner, attribute, original)
        self._saved.clear()

    def _patch(self, owner: Any, attribute: str, value: Any) -> None:
        self._saved.append((owner, attribute, getattr(owner, attribute)))
        setattr(owner, attribute, value)

    @contextmanager
    def take(self) -> Iterator[Taken]:
        """Time one call (a launch, an accept): the `Taken` is filled in when the block ends."""
        taken = Taken(0.0, 0.0, 0)
        self._current = taken
        t0 = time.perf_counter()
        try:
            yield taken
        finally:
            taken.wall_s = time.perf_counter() - t0
            self._current = None

    def _timed_run(self, *args: Any, **kwargs: Any) -> Any:
        if self._current is None or not _is_git(args):
            return self._run(*args, **kwargs)
        t0 = time.perf_counter()
        try:
            return self._run(*args, **kwargs)
        finally:
            spent = time.perf_counter() - t0
            with self._lock:
                if self._current is not None:
                    self._current.git_s += spent
                    self._current.git_calls += 1
                    self._current.commands.append((_words(args[0]), 1000 * spent))
                for span in self._active:
                    span.git_s += spent

    def _wrap(self, function: Callable[..., Any], name: str) -> Callable[..., Any]:
        @functools.wraps(function)
        def timed(*args: Any, **kwargs: Any) -> Any:
            taken = self._current
            if taken is None:
                return function(*args, **kwargs)
            with self._lock:
                span = taken.spans.setdefault(name, Span())
                mark = Span()  # this call's own git time, added to the span when it ends
                self._active.append(mark)
            t0 = time.perf_counter()
            try:
                return function(*args, **kwargs)
            finally:
                with self._lock:
                    self._active.remove(mark)
                    span.calls += 1
                    span.wall_s += time.perf_counter() - t0
                    span.git_s += mark.git_s
        return timed


def medians(takes: Sequence[Taken]) -> dict[str, Any]:
    """The median of each figure over several calls (spans by name; a span absent from a call counts 0)."""
    from tests.bench.report import median

    if not takes:
        return {}
    names = sorted({name for t in takes for name in t.spans})
    return {"wall_ms": median([1000 * t.wall_s for t in takes]), "git_ms": median([1000 * t.git_s for t in takes]),
            "own_ms": median([1000 * t.own_s for t in takes]), "git_calls": median([t.git_calls for t in takes]),
            "spans": {name: {"wall_ms": median([1000 * t.spans[name].wall_s if name in t.spans else 0.0
                                                for t in takes]),
                             "git_ms": median([1000 * t.spans[name].git_s if name in t.spans else 0.0
                                               for t in takes]),
                             "own_ms": median([1000 * (t.spans[name].wall_s - t.spans[name].git_s)
                                               if name in t.spans else 0.0 for t in takes])}
                      for name in names}}


def describe(label: str, summary: dict[str, Any]) -> str:
    """One line per span, for stderr: where the own time goes."""
    if not summary:
        return f"{label}: nothing timed"
    lines = [f"{label}: wall {summary['wall_ms']:.1f} ms, git {summary['git_ms']:.1f} ms "
             f"({summary['git_calls']:g} calls), lanes-tui's own {summary['own_ms']:.1f} ms (medians)"]
    for name, span in sorted(summary["spans"].items(), key=lambda item: -item[1]["wall_ms"]):
        lines.append(f"  {name:<28} wall {span['wall_ms']:8.1f} ms   git {span['git_ms']:8.1f} ms   "
                     f"own {span['own_ms']:8.1f} ms")
    return "\n".join(lines)
