"""What the lead sees of gates while and after they run: progress lines and each step's full output.

A gate can run for twenty minutes; a lane that sits in `checking` with nothing to read looks hung. So
each step says when it starts (and its limit) and when it ends (duration, exit) in the lane's
`output.log` — the Output tab and `peek` show it — and as a `gate` event. Its whole output (bounded:
the head and the tail when it is huge, since a hang's stack is at the end) stays in
`<lane dir>/gates/<name>.log`, 0600: the Gates tab and `check ID --log` read it after the packet's
short tail is not enough.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO

__all__ = ["GATES_DIR", "MAX_LOG_BYTES", "GateReport", "GateStepView", "StepLog", "duration_text", "gate_files_line",
           "gate_log_path", "gate_report", "progress_line", "read_gate_log"]

GATES_DIR = "gates"
#: A step's kept output: the first half and the last half of this many bytes.
MAX_LOG_BYTES = 1024 * 1024

#: Called with one progress line (no newline) and the event's fields.
Progress = Callable[[str, dict[str, object]], None]


def gate_log_path(lane_dir: Path, name: str) -> Path:
    return lane_dir / GATES_DIR / f"{name}.log"


def duration_text(seconds: float) -> str:
    """`850ms`, `42s`, `1m02s`, `20m`, `1h05m`: short enough for a progress line and a table cell."""
    if seconds < 1:
        return f"{seconds * 1000:.0f}ms"
    if seconds < 60:
        return f"{seconds:.0f}s" if seconds >= 10 else f"{seconds:.1f}s"
    minutes, secs = divmod(round(seconds), 60)
    if minutes >= 60:
        hours, minutes = divmod(minutes, 60)
        return f"{hours}h{minutes:02d}m"
    return f"{minutes}m" if secs == 0 else f"{minutes}m{secs:02d}s"


def progress_line(name: str, what: str) -> str:
    return f"[gate] {name}: {what}"


def append_output(output: Path, line: str) -> None:
    """One line at the end of the lane's `output.log` (0600, like the agent's own output)."""
    fd = os.open(output, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
    with os.fdopen(fd, "ab") as fh:
        fh.write(line.encode("utf-8", "replace") + b"\n")


class StepLog:
    """One step's output file: everything up to half the bound, then a rolling tail written at close."""

    def __init__(self, path: Path, header: str) -> None:
        self.path = path
        path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        path.unlink(missing_ok=True)  # an earlier check's log: this run's replaces it
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        self.fh: BinaryIO = os.fdopen(fd, "wb")
        self.head_left = MAX_LOG_BYTES // 2
        self.tail = bytearray()
        self.dropped = 0
        self.fh.write(header.encode("utf-8", "replace") + b"\n")

    def write(self, chunk: bytes) -> None:
        if self.head_left > 0:
            head, chunk = chunk[: self.head_left], chunk[self.head_left:]
            self.fh.write(head)
            self.head_left -= len(head)
        if chunk:
            self.tail.extend(chunk)
            excess = len(self.tail) - MAX_LOG_BYTES // 2
            if excess > 0:
                del self.tail[:excess]
                self.dropped += excess

    def close(self, footer: str) -> None:
        if self.dropped:
            self.fh.write(f"\n[lanes-tui: {self.dropped} bytes left out]\n".encode())
        self.fh.write(bytes(self.tail))
        self.fh.write(b"\n" + footer.encode("utf-8", "replace") + b"\n")
        self.fh.close()


def read_gate_log(path: str | Path, limit: int = MAX_LOG_BYTES + 4096) -> str:
    """A step's kept output, or '' when there is none (an older packet, a log removed)."""
    if not path:
        return ""
    try:
        with open(path, "rb") as fh:
            return fh.read(limit).decode("utf-8", errors="replace")
    except OSError:
        return ""


@dataclass(frozen=True)
class GateStepView:
    """One step as the Gates tab and `check --log` show it."""

    name: str
    status: str  # passed | failed | timeout | not-run | planned
    duration_s: float
    command: str
    exit_code: int | None = None
    timeout_s: float = 0.0
    log: str = ""

    @property
    def failed(self) -> bool:
        return self.status in ("failed", "timeout")


@dataclass(frozen=True)
class GateReport:
    """A lane's gates: every step, and the first failing step's output (its kept log, else its tail)."""

    steps: tuple[GateStepView, ...] = ()
    failing: str | None = None
    output: str = ""
    warnings: tuple[str, ...] = ()
    #: True when the steps are what would run (no check has run yet), not what ran.
    planned: bool = False
    #: What the gates waited for before they ran (`waited 42s for the machine: load 5.1 > 4.0`), then why
    #: they did not run when they did not (`not run: the machine stayed busy for 10m (…)`).
    waits: tuple[str, ...] = ()
    #: The files the gates left in the worktree on top of the frozen work (`git.frozen_work`): never merged.
    gate_files: tuple[str, ...] = ()


def gate_files_line(files: object) -> str | None:
    """`files the gates left, not merged (2): a.pyc, b.pyc`, or None when there are none."""
    names = [f for f in files if isinstance(f, str)] if isinstance(files, list | tuple) else []
    if not names:
        return None
    return f"files the gates left, not merged ({len(names)}): " + ", ".join(names[:12]) + (" …" if len(names) > 12
                                                                                          else "")


def gate_report(packet: Mapping[str, Any] | None, planned: list[tuple[str, str, float]] | None = None) -> GateReport:
    """The packet's gates as views; `planned` ((name, command, limit) of the effective steps) when it has none."""
    raw = (packet or {}).get("gates") or []
    warnings = tuple(w for w in (packet or {}).get("warnings") or [] if isinstance(w, str))
    left = tuple(f for f in (packet or {}).get("gate_files") or [] if isinstance(f, str))
    if not raw:
        steps = tuple(GateStepView(n, "planned", 0.0, c, None, t) for n, c, t in planned or [])
        return GateReport(steps, warnings=warnings, planned=True, gate_files=left)
    views: list[GateStepView] = []
    tails: dict[int, str] = {}
    waits: list[str] = []
    for index, gate in enumerate(g for g in raw if isinstance(g, dict)):
        code = gate.get("exit_code")
        kept = gate.get("waits")
        waits += [w for w in kept if isinstance(w, str)] if isinstance(kept, list) else []
        if gate.get("status") == "not-run" and str(gate.get("output_tail") or "").startswith("not run: ") \
                and not any(w.startswith("not run: ") for w in waits):
            waits.append(str(gate["output_tail"]))
        views.append(GateStepView(
            name=str(gate.get("name") or gate.get("command") or "gate"),
            status=str(gate.get("status") or "?"),
            duration_s=float(gate.get("duration_s") or 0.0),
            command=str(gate.get("shown") or gate.get("command") or ""),
            exit_code=code if isinstance(code, int) else None,
            timeout_s=float(gate.get("timeout_s") or 0.0),
            log=str(gate.get("log") or ""),
        ))
        tails[index] = str(gate.get("output_tail") or "")
    failing = next((i for i, v in enumerate(views) if v.failed), None)
    if failing is None:
        return GateReport(tuple(views), warnings=warnings, waits=tuple(waits), gate_files=left)
    output = read_gate_log(views[failing].log) or tails[failing]
    return GateReport(tuple(views), views[failing].name, output, warnings, waits=tuple(waits), gate_files=left)
