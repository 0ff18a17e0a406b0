"""What the watchdog writes, typed once: a lane's meter samples and its stall report.

A supervisor appends one line to `samples.jsonl` every few seconds (idle seconds, CPU %, RSS, the
process count, what counted as activity, and the process tree once the lane goes quiet), and when the
watchdog stops a lane it keeps a stall report (idle seconds, when, the tree it killed, the limit) in
`lane.json` and in the `state` event of `events.jsonl`. Both files sit in the lane's folder, where an
agent can write, and a lead may edit them by hand: so they are read here, once, into frozen
dataclasses (`MeterSample`, `StallReport`, each process a `SampledProc`), and nothing above the engine
ever looks a key up in a mapping.

The tolerance is the one the panes always had: a figure that is not what it should be (a string, a
NaN, a bool, a number too big) is dropped and shown as unknown; it never becomes a crash in a widget.
What was dropped is not silent either: each parser names it in `problems` (`'cpu_percent' is 'soon',
not a number of 0 or more`), which the engine logs and the Stalls pane shows. The JSON on disk is
unchanged; `to_json()` gives back the fields that were read, in the order the supervisor writes them.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

__all__ = ["MeterSample", "SampledProc", "StallReport", "parse_sample", "parse_stall", "parse_tree"]

#: The largest count a sample may carry (a hand edit's 10**40 is no RSS).
_MAX_COUNT = 2**63
#: How many characters of a bad value a problem quotes.
_SHOWN = 40


@dataclass(frozen=True)
class SampledProc:
    """One process of a sampled tree (`procs.sampler.ProcInfo.to_json`); a field that was missing or
    not what it should be is None."""

    pid: int | None = None
    ppid: int | None = None
    name: str | None = None
    cmdline: str | None = None
    cpu_s: float | None = None
    rss: int | None = None

    def to_json(self) -> dict[str, Any]:
        """The process as the sampler writes it, without the fields that were not there."""
        return {key: value for key, value in (("pid", self.pid), ("ppid", self.ppid), ("name", self.name),
                                              ("cmdline", self.cmdline), ("cpu_s", self.cpu_s), ("rss", self.rss))
                if value is not None}


@dataclass(frozen=True)
class MeterSample:
    """One line of `samples.jsonl`: the figures a lane's row and the Meters pane show.

    A figure is None when the line did not carry it or carried something that is no such figure
    (then `problems` says what); a reader keeps its previous value for a None (`LaneStatus.with_sample`).
    """

    t: float | None = None
    idle_s: float | None = None
    cpu_percent: float | None = None
    rss_bytes: int | None = None
    procs: int | None = None
    output_bytes: int | None = None
    #: What counted as activity since the last sample (`output`, `files`, `cpu`, `waiting`…).
    active: tuple[str, ...] = ()
    #: The lane waits for the lead (an open question): its silence is no stall.
    waiting: bool = False
    #: The process tree, written once the lane has been quiet past `warn_after_s`; None otherwise.
    tree: tuple[SampledProc, ...] | None = None
    #: What was dropped from the line and why; empty for a line the supervisor wrote.
    problems: tuple[str, ...] = ()


@dataclass(frozen=True)
class StallReport:
    """Why the watchdog stopped a lane: `lane.json`'s `stall` and the `stalled` event's.

    `idle_s` and `idle_timeout_s` keep the number as written (900 stays 900, not 900.0): `status
    --json` prints the report back.
    """

    idle_s: float | None = None
    #: When the watchdog fired (wall clock).
    at: float | None = None
    #: The processes the watchdog found (and stopped).
    tree: tuple[SampledProc, ...] = ()
    #: The idle limit that was passed.
    idle_timeout_s: float | None = None
    #: What was dropped from the report and why; empty for a report the supervisor wrote.
    problems: tuple[str, ...] = ()
    #: Which keys the report had, so `to_json` prints no key that was not there.
    present: frozenset[str] = frozenset()

    def to_json(self) -> dict[str, Any]:
        """The report as the supervisor writes it (`status --json`'s `stall`)."""
        out: dict[str, Any] = {}
        for key in ("idle_s", "at", "tree", "idle_timeout_s"):
            if key not in self.present:
                continue
            if key == "tree":
                out["tree"] = [proc.to_json() for proc in self.tree]
            elif getattr(self, key) is not None:
                out[key] = getattr(self, key)
        return out


def parse_sample(data: object) -> MeterSample:
    """A `samples.jsonl` line (any JSON value) as a `MeterSample`; never raises."""
    if not isinstance(data, Mapping):
        return MeterSample(problems=(f"the sample is {_shown(data)}, not a JSON object",))
    problems: list[str] = []
    t = _number(data, "t", problems, minimum=None)
    idle, cpu = (_number(data, key, problems) for key in ("idle_s", "cpu_percent"))
    rss, procs, output = (_count(data, key, problems) for key in ("rss_bytes", "procs", "output_bytes"))
    active: tuple[str, ...] = ()
    raw_active = data.get("active")
    if isinstance(raw_active, list) and all(isinstance(a, str) for a in raw_active):
        active = tuple(raw_active)
    elif raw_active is not None:
        problems.append(f"'active' is {_shown(raw_active)}, not a list of strings")
    waiting = data.get("waiting", False)
    if not isinstance(waiting, bool):
        problems.append(f"'waiting' is {_shown(waiting)}, not true or false")
        waiting = False
    raw_tree = data.get("tree")
    tree = None if raw_tree is None else parse_tree(raw_tree, problems)
    if not isinstance(raw_tree, list):
        tree = None  # a tree that is no list is no tree (the problem is named), not an empty one
    return MeterSample(None if t is None else float(t), None if idle is None else float(idle),
                       None if cpu is None else float(cpu), rss, procs, output, active, waiting, tree,
                       tuple(problems))


def parse_stall(data: object) -> StallReport:
    """A stall report (any JSON value) as a `StallReport`; never raises."""
    if not isinstance(data, Mapping):
        return StallReport(problems=(f"the stall report is {_shown(data)}, not a JSON object",))
    problems: list[str] = []
    idle = _number(data, "idle_s", problems)
    at = _number(data, "at", problems, minimum=None)
    limit = _number(data, "idle_timeout_s", problems)
    tree = parse_tree(data["tree"], problems) if data.get("tree") is not None else ()
    present = frozenset(key for key in ("idle_s", "at", "tree", "idle_timeout_s") if key in data)
    return StallReport(idle, at, tree, limit, tuple(problems), present)


def parse_tree(data: object, problems: list[str] | None = None) -> tuple[SampledProc, ...]:
    """A process tree (a JSON list of processes); an entry that is no object is left out, and named
    in `problems` when given."""
    found = problems if problems is not None else []
    if not isinstance(data, list):
        found.append(f"'tree' is {_shown(data)}, not a list of processes")
        return ()
    out = []
    for index, entry in enumerate(data):
        if not isinstance(entry, Mapping):
            found.append(f"'tree'[{index}] is {_shown(entry)}, not a process object")
            continue
        out.append(_proc(entry, index, found))
    return tuple(out)


def _proc(entry: Mapping[str, Any], index: int, problems: list[str]) -> SampledProc:
    where: list[str] = []
    pid, ppid, rss = (_count(entry, key, where) for key in ("pid", "ppid", "rss"))
    name, cmdline = (_text(entry, key, where) for key in ("name", "cmdline"))
    cpu = _number(entry, "cpu_s", where)
    problems.extend(f"'tree'[{index}]: {problem}" for problem in where)
    return SampledProc(pid, ppid, name, cmdline, cpu, rss)


def _number(data: Mapping[str, Any], key: str, problems: list[str], *, minimum: float | None = 0.0) -> Any:
    """A finite number (not a bool), at least `minimum`; None when missing or bad (named in `problems`).
    The value is returned as written (an int stays an int)."""
    value = data.get(key)
    if value is None:
        return None
    if (isinstance(value, int | float) and not isinstance(value, bool) and _finite(value)
            and (minimum is None or value >= minimum)):
        return value
    want = "a number" if minimum is None else f"a number of {minimum:g} or more"
    problems.append(f"{key!r} is {_shown(value)}, not {want}")
    return None


def _count(data: Mapping[str, Any], key: str, problems: list[str]) -> int | None:
    """A whole number from 0 to 2**63 (not a bool); None when missing or bad (named in `problems`)."""
    value = data.get(key)
    if value is None:
        return None
    if isinstance(value, int) and not isinstance(value, bool) and 0 <= value < _MAX_COUNT:
        return value
    problems.append(f"{key!r} is {_shown(value)}, not a whole number of 0 or more")
    return None


def _text(data: Mapping[str, Any], key: str, problems: list[str]) -> str | None:
    value = data.get(key)
    if value is None or isinstance(value, str):
        return value
    problems.append(f"{key!r} is {_shown(value)}, not a string")
    return None


def _finite(value: float) -> bool:
    try:
        return math.isfinite(value)
    except OverflowError:  # an integer no float can hold
        return False


def _shown(value: object) -> str:
    """A bad value quoted briefly: a problem line must stay one line."""
    text = repr(value)
    text = text if len(text) <= _SHOWN else text[:_SHOWN - 1] + "…"
    return "".join(ch if ch.isprintable() else "?" for ch in text)
