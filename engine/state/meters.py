"""Tokens and cost per lane, fed by the channel parsers and kept in the lane's `meters.json`.

Why a file: the supervisor parses the agent's stream, but `status --json`, the dashboard and a
restarted engine read the figures, and they may run in other processes. The file is replaced
atomically, at most every `FLUSH_S` seconds while figures change and once more when a run ends, so a
chatty stream never turns into a write per line.

One lane can run several providers one after another (a chain): each provider run is one entry of
`runs`, and the lane's figures are the sum over its runs. A new `RunMeter` reads the runs already in
the file, so accumulation survives anything that re-creates the meter.

Token semantics, the same for every provider so the sums mean something:

* `input` — every prompt token the model read, cached or not (Claude's `input_tokens` +
  `cache_read_input_tokens` + `cache_creation_input_tokens`; Codex's `input_tokens`, which already
  include `cached_input_tokens`);
* `cached_input` — the part of `input` read from a prompt cache (cheaper);
* `cache_write` — the part of `input` written to a prompt cache (dearer, Claude only);
* `output` — generated tokens.

`total` = `input` + `output`.

Besides the sums, a run keeps how full its agent's context window is (`state.context`): the prompt of
the latest request, set by the channels that can read it, with the window it is measured against.
It is the current run's only (another provider's agent in the chain has a context of its own).
"""

from __future__ import annotations

import logging
import math
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType
from typing import Any

from lanes_tui.engine.core.atomic import read_json, write_json_atomic
from lanes_tui.engine.core.clock import Clock
from lanes_tui.engine.core.errors import LanesError
from lanes_tui.engine.core.schema import NewerSchema, check_schema, stamped
from lanes_tui.engine.state.context import DEFAULT_WARN, ContextMeter, parse_context, window_for

log = logging.getLogger(__name__)

#: At most one write every 2 s while figures change. The dashboard shows meters once a second at most
#: (`app/dashboard/bridge.py`) and re-reads a lane whose `meters.json` changed: at 0.5 s, 100 Claude
#: lanes (each message carries its usage) made about 75 rewrites a second for it to read (docs/
#: benchmarks.md, "Real traffic", B2 at 100 lanes). A run's end still writes at once.
FLUSH_S = 2.0
METERS_FILE = "meters.json"
USD_SOURCES = ("reported", "estimated")


@dataclass(frozen=True)
class Usage:
    """Token counts in the common semantics of the module docstring."""

    input: int = 0
    cached_input: int = 0
    cache_write: int = 0
    output: int = 0

    def __add__(self, other: Usage) -> Usage:
        return Usage(self.input + other.input, self.cached_input + other.cached_input,
                     self.cache_write + other.cache_write, self.output + other.output)

    @property
    def total(self) -> int:
        return self.input + self.output

    def to_json(self) -> dict[str, int]:
        return {"total": self.total, "input": self.input, "cached_input": self.cached_input,
                "cache_write": self.cache_write, "output": self.output}

    @classmethod
    def from_json(cls, data: Any) -> Usage:
        if not isinstance(data, Mapping):
            return cls()
        return cls(*(_count(data.get(k)) for k in ("input", "cached_input", "cache_write", "output")))


@dataclass(frozen=True)
class Price:
    """US dollars per million tokens. `cached_input` / `cache_write` apply to those parts of `input`."""

    input: float
    cached_input: float
    output: float
    cache_write: float | None = None  # None: priced like ordinary input

    def cost(self, usage: Usage) -> float:
        uncached = max(0, usage.input - usage.cached_input - usage.cache_write)
        write_rate = self.input if self.cache_write is None else self.cache_write
        return (uncached * self.input + usage.cached_input * self.cached_input
                + usage.cache_write * write_rate + usage.output * self.output) / 1_000_000


#: List prices (USD per million tokens) for estimating the cost of CLIs that print no cost (Codex,
#: Gemini). Looked up by exact model name, then by the longest matching prefix. An estimate is always
#: labelled as one (`cost_estimated`), and a model missing here simply has no cost.
PRICES: Mapping[str, Price] = MappingProxyType({
    "gpt-5-codex": Price(1.25, 0.125, 10.0),
    "gpt-5.1-codex-mini": Price(0.25, 0.025, 2.0),
    "gpt-5.1-codex": Price(1.25, 0.125, 10.0),
    "gpt-5-mini": Price(0.25, 0.025, 2.0),
    "gpt-5-nano": Price(0.05, 0.005, 0.40),
    "gpt-5": Price(1.25, 0.125, 10.0),
    "o4-mini": Price(1.10, 0.275, 4.40),
    "gemini-2.5-pro": Price(1.25, 0.31, 10.0),
    "gemini-2.5-flash-lite": Price(0.10, 0.025, 0.40),
    "gemini-2.5-flash": Price(0.30, 0.075, 2.50),
    "claude-opus": Price(15.0, 1.50, 75.0, 18.75),
    "opus": Price(15.0, 1.50, 75.0, 18.75),
    "claude-sonnet": Price(3.0, 0.30, 15.0, 3.75),
    "sonnet": Price(3.0, 0.30, 15.0, 3.75),
    "claude-haiku": Price(1.0, 0.10, 5.0, 1.25),
    "haiku": Price(1.0, 0.10, 5.0, 1.25),
})


def price_for(model: str, table: Mapping[str, Price] = PRICES) -> Price | None:
    """The price of `model`: exact name first, then the longest table key it starts with."""
    name = model.strip().lower()
    if not name:
        return None
    if name in table:
        return table[name]
    matches = [key for key in table if name.startswith(key)]
    return table[max(matches, key=len)] if matches else None


def estimate_usd(model: str, usage: Usage, table: Mapping[str, Price] = PRICES) -> float | None:
    price = price_for(model, table)
    return None if price is None else round(price.cost(usage), 6)


class RunMeter:
    """The figures of one provider run, plus the runs before it in the same lane.

    Channels feed it three ways, because the CLIs report three ways:
    `set_message` (Claude's live usage: the latest figures of a message replace the earlier ones),
    `add_turn` (Codex turns and aider messages: each adds), and `set_total` (a final summary that
    replaces both). Cost is either reported by the CLI (`set_cost`) or estimated from `PRICES`.
    The context meter: `set_context` (the latest request's prompt) and `set_context_window` (the
    window the CLI reported); `context_window` > 0 is the lead's `[providers.NAME] context_window`.
    A new run starts without a meter (a new agent process: the chain's next provider has a context of
    its own) unless it `measures_context` not at all, as a reviewer, which keeps the agent's.
    """

    def __init__(self, path: Path, clock: Clock, *, provider: str, model: str,
                 flush_s: float = FLUSH_S, context_window: int = 0, context_warn: float = DEFAULT_WARN,
                 measures_context: bool = True) -> None:
        self.path = path
        self.clock = clock
        self.provider = provider
        self.model = model
        self.flush_s = flush_s
        self.context_window = context_window
        self.context_warn = context_warn
        #: False for a run that is not the lane's agent (a reviewer): the agent's last meter is kept.
        self.measures_context = measures_context
        self._context_used: int | None = None
        self._reported_window: int | None = None
        self.session_id: str | None = None
        self._previous, self._kept_context = _read_file(path)
        self._messages: dict[str, Usage] = {}
        self._turns = Usage()
        self._total: Usage | None = None
        self._usd: float | None = None
        self._usd_source: str | None = None
        self._dirty = False
        self._last_flush: float | None = None

    # --- feeding ---------------------------------------------------------------------------------

    def set_message(self, message_id: str, usage: Usage) -> None:
        if self._messages.get(message_id) != usage:
            self._messages[message_id] = usage
            self._dirty = True

    def add_turn(self, usage: Usage) -> None:
        if usage != Usage():
            self._turns = self._turns + usage
            self._dirty = True

    def set_total(self, usage: Usage) -> None:
        if self._total != usage:
            self._total = usage
            self._dirty = True

    def set_cost(self, usd: float, source: str = "reported") -> None:
        if source not in USD_SOURCES:
            raise ValueError(f"unknown usd source {source!r}")
        if (self._usd, self._usd_source) != (usd, source):
            self._usd, self._usd_source = usd, source
            self._dirty = True

    def set_model(self, model: str) -> None:
        """The model the CLI says it runs (more precise than the preset's alias, for estimates)."""
        if model and model != self.model:
            self.model = model
            self._dirty = True

    def set_session(self, session_id: str) -> None:
        if session_id and session_id != self.session_id:
            self.session_id = session_id
            self._dirty = True

    def set_context(self, used: int) -> None:
        """The prompt of the agent's latest request, in tokens (cached or not): how full its context is."""
        if used > 0 and used != self._context_used:
            self._context_used = used
            self._dirty = True

    def set_context_window(self, window: int) -> None:
        """The model's window as the CLI reports it (kept in the run record for the runs after)."""
        if window > 0 and window != self._reported_window:
            self._reported_window = window
            self._dirty = True

    # --- reading ---------------------------------------------------------------------------------

    def usage(self) -> Usage:
        """This run's tokens: the final summary if the CLI printed one, else the live figures."""
        if self._total is not None:
            return self._total
        live = self._turns
        for usage in self._messages.values():
            live = live + usage
        return live

    def cost(self) -> tuple[float | None, str | None]:
        """This run's USD and where it came from; estimated from the price table unless reported."""
        if self._usd_source == "reported":
            return self._usd, "reported"
        usage = self.usage()
        if usage.total == 0:
            return None, None
        usd = estimate_usd(self.model, usage)
        return (usd, "estimated") if usd is not None else (None, None)

    def context(self) -> ContextMeter | None:
        """This run's context meter; None until the CLI reported a request's prompt (or never does)."""
        if not self.measures_context:
            return self._kept_context
        if self._context_used is None:
            return None
        window, source = self.window()
        return ContextMeter(self._context_used, window, self.context_warn, source)

    def window(self) -> tuple[int, str]:
        """The window and where it came from: the lead's config, what this CLI reported (in this run,
        or in an earlier run of the same model), else the model's family (`state.context`)."""
        if self.context_window > 0:
            return self.context_window, "config"
        reported = self._reported_window or next(
            (_count(run.get("context_window")) for run in reversed(self._previous)
             if run.get("model") == self.model and _count(run.get("context_window"))), 0)
        return (reported, "reported") if reported else window_for(self.model)

    def run_record(self) -> dict[str, Any]:
        usd, source = self.cost()
        record = {"provider": self.provider, "model": self.model, "session_id": self.session_id,
                  **self.usage().to_json(), "usd": usd, "usd_source": source}
        if self._reported_window:
            record["context_window"] = self._reported_window
        return record

    def snapshot(self) -> dict[str, Any]:
        """The whole `meters.json`: lane totals over every run, and the runs themselves."""
        runs = [*self._previous, self.run_record()]
        total = Usage()
        usd: float | None = None
        estimated = False
        for run in runs:
            total = total + Usage.from_json(run)
            run_usd = dollars(run.get("usd"))
            if run_usd is not None:
                usd = (usd or 0.0) + run_usd
                estimated = estimated or run.get("usd_source") == "estimated"
        source = None if usd is None else ("estimated" if estimated else "reported")
        context = self.context()
        return {
            "tokens": total.to_json(),
            "cost_usd": None if usd is None else round(usd, 6),
            "cost_estimated": estimated,
            "usd_source": source,
            "session_id": self.session_id or _last_session(self._previous),
            "runs": runs,
            "context": None if context is None else context.to_json(),
            "updated": self.clock.time(),
        }

    # --- writing ---------------------------------------------------------------------------------

    def maybe_flush(self) -> None:
        """Write the file if something changed and the last write is at least `flush_s` old."""
        if not self._dirty:
            return
        now = self.clock.monotonic()
        if self._last_flush is not None and now - self._last_flush < self.flush_s:
            return
        self.flush()

    def flush(self) -> None:
        """Write now if anything changed; a plain run that saw no figures leaves no file behind."""
        if not self._dirty:
            return
        try:
            write_json_atomic(self.path, stamped(self.snapshot(), "meters.json"))
        except OSError:
            log.exception("cannot write %s", self.path)
            return
        self._dirty = False
        self._last_flush = self.clock.monotonic()


def _count(value: Any) -> int:
    """A token count: a number from 0 to 2**63 (so NaN, infinity and a hand edit's 10**400 count 0)."""
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0 <= value < 2**63:
        return 0
    return int(value)


def dollars(value: Any) -> float | None:
    """A cost read back from a file: a finite number of dollars, or None."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    try:
        usd = float(value)
    except OverflowError:  # an integer no float can hold
        return None
    return usd if math.isfinite(usd) else None


def lane_figures(data: Any) -> dict[str, Any]:
    """The figures `status` shows from a `meters.json` read back (anyone can edit it): token counts
    as `_count` reads them, the cost a finite number or None, `cost_estimated` true or false, the
    `context` a `ContextMeter` or None."""
    if not isinstance(data, dict):
        return {}
    tokens = data.get("tokens")
    return {
        "tokens": {str(k): _count(v) for k, v in tokens.items()} if isinstance(tokens, dict) else None,
        "cost_usd": dollars(data.get("cost_usd")),
        "cost_estimated": data.get("cost_estimated") is True,
        "context": parse_context(data.get("context")),
    }


def _read_file(path: Path) -> tuple[list[dict[str, Any]], ContextMeter | None]:
    """The runs already in the file, and its context meter (kept by a run that measures none)."""
    try:
        data = read_json(path)
    except (FileNotFoundError, ValueError, OSError):
        return [], None
    try:  # a newer file is refused (rewritten in this format, it would lose what this version cannot read)
        check_schema(data, "meters.json", f"meters.json of {path.parent.name}")
    except NewerSchema:
        raise
    except LanesError:
        return [], None
    if not isinstance(data, dict):
        return [], None
    runs = data.get("runs")
    return ([run for run in runs if isinstance(run, dict)] if isinstance(runs, list) else [],
            parse_context(data.get("context")))


def _last_session(runs: list[dict[str, Any]]) -> str | None:
    for run in reversed(runs):
        if isinstance(run.get("session_id"), str):
            return str(run["session_id"])
    return None
