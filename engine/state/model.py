"""Lane states, results and the lane record kept in `lane.json`.

The names are a contract with scripts and tests (PRODUCT.md), so they are plain strings in one place.
"""

from __future__ import annotations

import math
import types
from collections.abc import Callable
from dataclasses import MISSING, asdict, dataclass, field, fields
from typing import Any, Union, get_args, get_origin, get_type_hints

from lanes_tui.engine.core.errors import LanesError

STATES = (
    "queued", "launching", "running", "waiting", "stalled", "exited", "checking", "reviewing",
    "ready", "rejected", "conflict", "accepted", "abandoned", "lost", "unreachable",
)
RESULTS = ("OK", "LANE-FAILED", "LANE-STALLED", "OUT-OF-BUDGET", "CONFIG-ERROR", "FAILED-RESOURCE", "NO-CHANGES")
TASK_TYPES = ("backend", "hard", "ui", "tests", "docs")

#: States in which a supervisor is expected to be alive and own the lane.
LIVE_STATES = frozenset({"queued", "launching", "running", "waiting"})
#: States no process of the lane should be in any more.
FINAL_STATES = frozenset({"accepted", "abandoned"})
#: States after which a lane does nothing more by itself (`wait`'s default).
SETTLED_STATES = ("exited", "stalled", "ready", "rejected", "conflict", "accepted", "abandoned", "lost")
#: Settled states a lane is still on its way out of while its supervisor lives: to its packet
#: (`exited`, `stalled`) or, ready after its gates, to its review.
SETTLING_STATES = frozenset({"exited", "stalled", "ready"})


@dataclass
class ProviderAttempt:
    """One provider's run inside a lane: what ran, how it ended, how long it took."""

    provider: str
    model: str = ""
    result: str | None = None
    returncode: int | None = None
    started: float | None = None
    ended: float | None = None
    duration_s: float | None = None
    reason: str = ""
    session_id: str | None = None
    #: The kind of the structured API error that ended it (`channels.base.ERROR_KINDS`), if one did:
    #: `doctor` names the fix for a provider whose last run was refused for its credentials.
    error: str | None = None


@dataclass
class LaneRecord:
    """What `lane.json` holds. Written atomically; the supervisor is its writer while it lives."""

    id: str
    slug: str
    attempt: int
    task_type: str
    prompt: str
    chain: list[str]
    repo: str
    worktree: str
    branch: str
    base_sha: str
    target_branch: str
    state: str = "queued"
    state_reason: str = "created"
    result: str | None = None
    providers_tried: list[ProviderAttempt] = field(default_factory=list)
    created: float = 0.0
    updated: float = 0.0
    supervisor_pid: int | None = None
    supervisor_start: float | None = None
    agent_pid: int | None = None
    stall: dict[str, Any] | None = None
    session_id: str | None = None
    scope: list[str] = field(default_factory=list)
    superseded_by: str | None = None
    #: The worktree root this lane was created under (`origin.json` keeps the witness copy): a later
    #: change of `[lanes] worktree_root` applies to new lanes only. Empty in records older than it.
    worktree_root: str = ""
    #: `run --allow-load`: the lead allowed a prompt that asks to load the machine (`lanes.load_guard`);
    #: `recover --relaunch` keeps it.
    allow_load: bool = False
    #: `run --raw`: the agent gets the prompt alone, without the preamble (`lanes.preamble`).
    raw: bool = False
    #: The lead's caps for this lane from `run --cpu/--memory/--pids/--max-cost/--max-tokens/
    #: --allow-uncapped` (keys as in `[lanes]`), over the config's; `recover --relaunch` keeps them.
    caps: dict[str, Any] = field(default_factory=dict)
    #: The model of the chain's first provider, over the preset's (a plan ticket's tier); None: its own.
    model: str | None = None
    #: What the governor enforces for this lane and how (`lanes.caps`), written by the supervisor.
    governor: dict[str, Any] | None = None
    #: How the kernel confines the lane's writes (`lanes.confine`): `mechanism` (`landlock-abiN`, or
    #: `none` with the `reason` and `allowed_by`), and what was writable. Written by the supervisor.
    confinement: dict[str, Any] | None = None
    #: The plan and ticket this lane works on (`plans.scheduler` launches it as `<ticket>-aN`); None
    #: for a lane the lead started by hand. The scheduler trusts them only together with the lane's id.
    plan: str | None = None
    ticket: str | None = None
    #: The plan ticket's tier (`heavy`, …) when it has one: `[review] mode = "cross-heavy"` reads it.
    tier: str | None = None
    #: The last review's verdict (CLEAN, BLOCKING, MISSING), copied from the packet's `review` for the
    #: Lanes pane's review column; None before any review ran or was decided against. The packet's
    #: `review_detail` is what accept trusts, never this copy.
    review: str | None = None
    #: `run --best-of N`: the group id the N lanes share (`bo-<slug>-<hash>`); None for a lone lane.
    group: str | None = None
    #: A relaunch (`recover --relaunch`, `answer --relaunch`, a plan's next attempt): the attempt it
    #: follows, and that attempt's provider and session. The supervisor resumes the session when it
    #: runs that provider and the CLI can (`supervisor.resume`), else starts fresh and says why.
    resume_from: str | None = None
    resume_provider: str | None = None
    resume_session: str | None = None
    #: `recover --relaunch --fresh`: the lead asked for a new session.
    resume_fresh: bool = False
    #: `recover --relaunch --note TEXT` (or the recover dialog's note): the lead's own findings, which the
    #: prompt also carries quoted in its findings block; kept here so `status` shows them.
    lead_note: str | None = None
    #: `[lanes] attempts` when this lane started by hand (0: a plan's lane, which the plan counts, or an
    #: older record): its packet says `takeover`, not `redo`, once `attempt` reaches it.
    max_attempts: int = 0
    #: Where the lane runs: `local` (a supervisor on this machine) or `ray` (an actor on a cluster node,
    #: `engine.remote`); the local reconcile judges only local lanes by their supervisor's pid.
    runner: str = "local"
    #: The cluster node a `ray` lane runs (or last ran) on, as `hostname (node id)`; None for local lanes.
    node: str | None = None

    @property
    def provider(self) -> str | None:
        """The provider that ran last (or is running)."""
        return self.providers_tried[-1].provider if self.providers_tried else None

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> LaneRecord:
        """A record from `lane.json`, every field checked against its annotation.

        `lane.json` is a file anyone (an agent included) can edit, and one wrong type used to crash
        every `status` and the dashboard for all lanes (`"state": [1, 2]` is unhashable). So a wrong
        type, a missing field, NaN or infinity, or a state or result outside the contract is a
        LanesError naming the field; the caller shows that lane as corrupt and goes on with the
        others. Unknown keys are ignored (a newer lanes-tui may have written them).
        """
        if not isinstance(data, dict):
            raise LanesError(f"it holds {_kind(data)}, not a lane record")
        values = _checked(cls, data, "")
        attempts = values.get("providers_tried", [])
        values["providers_tried"] = [ProviderAttempt(**_checked(ProviderAttempt, item, f"providers_tried[{i}]."))
                                     for i, item in enumerate(attempts)]
        if values.get("state", "queued") not in STATES:
            raise LanesError(f"field 'state' is {values['state']!r}, not one of the lane states")
        if values.get("result") is not None and values["result"] not in RESULTS:
            raise LanesError(f"field 'result' is {values['result']!r}, not one of {', '.join(RESULTS)}")
        if values.get("attempt", 1) < 1:
            raise LanesError(f"field 'attempt' is {values['attempt']}, not a positive number")
        return cls(**values)


def _checked(cls: type[Any], data: Any, prefix: str) -> dict[str, Any]:
    """The known fields of `data` for dataclass `cls`, each of the annotated type (or LanesError)."""
    if not isinstance(data, dict):
        raise LanesError(f"field {prefix.rstrip('.')!r} must be an object, not {_kind(data)}")
    values: dict[str, Any] = {}
    for name, required, hint, fits in _field_checks(cls):
        if name not in data:
            if required:
                raise LanesError(f"field {prefix + name!r} is missing")
            continue
        value = data[name]
        if name == "providers_tried" and cls is LaneRecord:  # checked item by item by the caller
            if not isinstance(value, list):
                raise LanesError(f"field 'providers_tried' must be a list, not {_kind(value)}")
        elif not fits(value):
            raise LanesError(f"field {prefix + name!r} must be {_describe(hint)}, not {_kind(value)}")
        values[name] = value
    return values


_FIELD_CHECKS: dict[type[Any], tuple[tuple[str, bool, Any, Callable[[Any], bool]], ...]] = {}


def _field_checks(cls: type[Any]) -> tuple[tuple[str, bool, Any, Callable[[Any], bool]], ...]:
    """(name, required, annotation, its check) per field of dataclass `cls`, worked out once: typing's
    introspection on every field of every record was half of reading one (100 records: 75 ms). The
    annotations are strings until resolved (`get_type_hints`)."""
    if cls not in _FIELD_CHECKS:
        hints = get_type_hints(cls)
        _FIELD_CHECKS[cls] = tuple(
            (f.name, f.default is MISSING and f.default_factory is MISSING, hints[f.name], _check_for(hints[f.name]))
            for f in fields(cls))
    return _FIELD_CHECKS[cls]


def _check_for(hint: Any) -> Callable[[Any], bool]:
    """Whether a JSON value fits a type annotation (str, int, float, bool, list[…], dict[…], X | None,
    Any), as a test built from the annotation once."""
    origin = get_origin(hint)
    if hint is Any:
        return lambda _value: True
    if origin in (Union, types.UnionType):
        parts = tuple(_check_for(arg) for arg in get_args(hint))
        return lambda value: any(part(value) for part in parts)
    if hint is type(None):
        return lambda value: value is None
    if hint is bool:
        return lambda value: isinstance(value, bool)
    if hint is int:
        return lambda value: isinstance(value, int) and not isinstance(value, bool)
    if hint is float:  # JSON has one number type; NaN and infinity are refused (they pass every comparison)
        return lambda value: isinstance(value, int | float) and not isinstance(value, bool) and _finite(value)
    if hint is str:
        return lambda value: isinstance(value, str)
    if origin is list:
        (item,) = get_args(hint) or (Any,)
        each = _check_for(item)
        return lambda value: isinstance(value, list) and all(each(v) for v in value)
    if origin is dict:
        return lambda value: isinstance(value, dict) and all(isinstance(k, str) for k in value)
    return lambda _value: True  # an annotation this reader does not know: accepted as before


def _finite(value: float) -> bool:
    try:
        return math.isfinite(value)
    except OverflowError:  # an integer no float can hold
        return False


def _describe(hint: Any) -> str:
    origin = get_origin(hint)
    if origin in (Union, types.UnionType):
        return " or ".join(_describe(arg) for arg in get_args(hint))
    names = {str: "a string", int: "a whole number", float: "a finite number", bool: "true or false",
             type(None): "null"}
    if hint in names:
        return names[hint]
    if origin is list:
        return f"a list of {_describe((get_args(hint) or (Any,))[0]).removeprefix('a ')}s"
    return "an object" if origin is dict else str(hint)


def _kind(value: Any) -> str:
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)
    if isinstance(value, int) and not isinstance(value, bool) and not _finite(value):
        return "a number too large"
    return {bool: "true/false", int: "a number", float: "a number", str: "a string", list: "a list",
            dict: "an object", type(None): "null"}.get(type(value), type(value).__name__)
