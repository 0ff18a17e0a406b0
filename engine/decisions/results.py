"""The decisions' results as typed, frozen values: the packet `check` and `recover --recheck` return,
the review's verdict and the lead's verification.

On disk they stay the JSON they always were (`packet.json`, its `review_detail` and `verification`);
the decision API (`decisions.api.Decisions`) parses each one here once, with validation, so the
command line and the dashboard read attributes instead of probing mappings with `.get`. A packet a
reader cannot use is one `LanesError` naming the field and the fix (a new `check`), never a
`KeyError` three calls later. `to_json()` gives back exactly what was parsed: `--json` output and the
files are unchanged.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

from lanes_tui.engine.core.errors import LanesError

__all__ = ["GateLine", "Packet", "ReviewFinding", "ReviewVerdict", "Verification"]

#: The gates statuses after which a lane may go on (`check` exits 0).
_GATES_OK = ("passed", "none")


def _frozen(data: Mapping[str, Any]) -> Mapping[str, Any]:
    return MappingProxyType(dict(data))


def _problem(where: str, name: str, want: str, fix: str) -> LanesError:
    return LanesError(f"{where}: {name} is not {want}", fix)


def _strs(data: Mapping[str, Any], name: str, where: str, fix: str) -> tuple[str, ...]:
    value = data.get(name)
    if value is None:
        return ()
    if not isinstance(value, list | tuple) or not all(isinstance(v, str) for v in value):
        raise _problem(where, name, "a list of strings", fix)
    return tuple(value)


def _opt_str(data: Mapping[str, Any], name: str, where: str, fix: str) -> str | None:
    value = data.get(name)
    if value is not None and not isinstance(value, str):
        raise _problem(where, name, "a string", fix)
    return value


@dataclass(frozen=True)
class GateLine:
    """One gate step of a packet, as `check` prints it: its numbers as written (never coerced)."""

    command: str
    status: str
    exit_code: int | None
    duration_s: float | None

    def to_json(self) -> dict[str, object]:
        return {"command": self.command, "status": self.status, "exit_code": self.exit_code,
                "duration_s": self.duration_s}


@dataclass(frozen=True)
class Packet:
    """A lane's result packet (`decisions.packet`): what the gates said and what is next."""

    lane: str
    gates_status: str | None
    next: str | None
    review: str | None
    gates: tuple[GateLine, ...]
    warnings: tuple[str, ...]
    changed_files: tuple[str, ...]
    outside_scope: tuple[str, ...]
    #: The files the gates left in the worktree (never merged); None when the packet names none.
    gate_files: tuple[str, ...] | None
    #: The packet as it was read or written (read-only): `to_json()`.
    data: Mapping[str, Any]

    @property
    def ok(self) -> bool:
        """The gates passed (or there are none): `check` and `recover --recheck` exit 0."""
        return self.gates_status in _GATES_OK

    @classmethod
    def from_json(cls, data: object, *, lane: str = "", where: str = "") -> Packet:
        """Parse and validate a packet; a field of the wrong shape is one LanesError with the fix."""
        where = where or f"the packet of {lane or 'the lane'}"
        fix = f"run `lanes-tui check {lane or 'ID'}` to write a new one"
        if not isinstance(data, Mapping):
            raise LanesError(f"{where} is not a JSON object", fix)
        gates = data.get("gates") or []
        if not isinstance(gates, list | tuple) or not all(isinstance(g, Mapping) for g in gates):
            raise _problem(where, "gates", "a list of objects", fix)
        lines = []
        for gate in gates:
            command, status = gate.get("command"), gate.get("status")
            code, took = gate.get("exit_code"), gate.get("duration_s")
            if not isinstance(command, str) or not isinstance(status, str):
                raise _problem(where, "a gate's command or status", "a string", fix)
            if code is not None and (not isinstance(code, int) or isinstance(code, bool)):
                raise _problem(where, f"the exit code of {command!r}", "a number", fix)
            if took is not None and (not isinstance(took, int | float) or isinstance(took, bool)):
                raise _problem(where, f"the duration of {command!r}", "a number", fix)
            lines.append(GateLine(command, status, code, took))
        gate_files = data.get("gate_files")
        return cls(
            lane=str(data.get("lane") or lane),
            gates_status=_opt_str(data, "gates_status", where, fix), next=_opt_str(data, "next", where, fix),
            review=_opt_str(data, "review", where, fix), gates=tuple(lines),
            warnings=_strs(data, "warnings", where, fix), changed_files=_strs(data, "changed_files", where, fix),
            outside_scope=_strs(data, "outside_scope", where, fix),
            gate_files=None if gate_files is None else _strs(data, "gate_files", where, fix),
            data=_frozen(data))

    def to_json(self) -> dict[str, Any]:
        return dict(self.data)


@dataclass(frozen=True)
class ReviewFinding:
    """One finding of a review: `path:line: text` (`line` None when the reviewer gave none)."""

    path: str
    line: int | None
    text: str


@dataclass(frozen=True)
class ReviewVerdict:
    """The packet's `review_detail`: CLEAN, BLOCKING or MISSING, by whom, and the findings."""

    verdict: str
    reviewer: str | None
    family: str | None
    reason: str
    findings: tuple[ReviewFinding, ...]
    #: For MISSING: the reviewer's last lines.
    tail: str
    diff_digest: str
    data: Mapping[str, Any]

    @classmethod
    def from_json(cls, data: object, *, lane: str = "") -> ReviewVerdict:
        where = f"the review of {lane or 'the lane'}"
        fix = f"review it again: `lanes-tui review {lane or 'ID'}`"
        if not isinstance(data, Mapping) or data.get("verdict") not in ("CLEAN", "BLOCKING", "MISSING"):
            raise LanesError(f"{where} has no verdict (CLEAN, BLOCKING or MISSING)", fix)
        found = data.get("findings") or []
        if not isinstance(found, list | tuple) or not all(isinstance(f, Mapping) for f in found):
            raise _problem(where, "findings", "a list of objects", fix)
        findings = tuple(ReviewFinding(str(f.get("path", "?")), f["line"] if isinstance(f.get("line"), int) else None,
                                       str(f.get("text", ""))) for f in found)
        return cls(verdict=str(data["verdict"]), reviewer=_opt_str(data, "reviewer", where, fix),
                   family=_opt_str(data, "family", where, fix), reason=str(data.get("reason") or ""),
                   findings=findings, tail=str(data.get("tail") or ""),
                   diff_digest=str(data.get("diff_digest") or ""), data=_frozen(data))

    def to_json(self) -> dict[str, Any]:
        return dict(self.data)


@dataclass(frozen=True)
class Verification:
    """The lead's verification as recorded in the packet: who, when, the evidence, the diff it saw."""

    by: str
    at: float
    evidence: str
    diff_digest: str

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Verification:
        return cls(by=str(data["by"]), at=float(data["at"]), evidence=str(data["evidence"]),
                   diff_digest=str(data["diff_digest"]))

    def to_json(self) -> dict[str, object]:
        return {"by": self.by, "at": self.at, "evidence": self.evidence, "diff_digest": self.diff_digest}
