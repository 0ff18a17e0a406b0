"""Fuzzed files (issue 9, item 8): every file a hand edit or an agent can touch, read back with hypothesis.

A file under `.lanes/` may hold anything: wrong types, NaN, numbers no float can hold, lone surrogates,
nesting deeper than the interpreter's stack, arbitrary bytes. Whoever reads it gets a value of the
documented shape, or ONE clear error (LanesError, ConfigError, the inbox's BadFile) whose text is a
single line; never a traceback, and one bad file never hides the good ones next to it.

The examples are bounded (`max_examples`) and derandomized, so the file runs in well under a minute
and CI sees the same examples every time. `@example` pins the inputs that found real bugs.
"""

from __future__ import annotations

import functools
import inspect
import json
import math
import os
import re
import shutil
import sys
import tempfile
import time
import unicodedata
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, TypeVar

import pytest
import tomlkit
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from lanes_tui.engine.config.key_lines import find_key_line
from lanes_tui.engine.config.providers import CHANNELS, PROMPT_MODES, ProviderConfig
from lanes_tui.engine.config.settings import Config, load_config, parse_config
from lanes_tui.engine.core.clock import FakeClock
from lanes_tui.engine.core.errors import ConfigError, LanesError
from lanes_tui.engine.core.ids import validate_lane_id
from lanes_tui.engine.decisions.packet import read_packet
from lanes_tui.engine.git.lane_paths import LaneOrigin, locate_lane, read_origin
from lanes_tui.engine.git.lead_checkout import compare as compare_checkout
from lanes_tui.engine.inbox.files import (
    MARKS,
    BadFile,
    Question,
    parse_answer,
    parse_mark,
    parse_question,
    read_json_file,
)
from lanes_tui.engine.inbox.store import InboxStore
from lanes_tui.engine.live.queries import lane_statuses
from lanes_tui.engine.procs import cgroup
from lanes_tui.engine.state.meters import RunMeter
from lanes_tui.engine.state.model import RESULTS, STATES, LaneRecord, ProviderAttempt
from lanes_tui.engine.state.paths import StatePaths, repo_key, worktree_path
from lanes_tui.engine.state.status import lane_status
from lanes_tui.engine.state.store import LaneStore
from lanes_tui.widgets import _format as fmt
from tests.helpers import cli

T = TypeVar("T")


def bounded(examples: int) -> settings:
    """Few examples, no deadline (a slow shared machine), the same examples on every run, no database."""
    return settings(max_examples=examples, deadline=None, derandomize=True, database=None,
                    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow,
                                           HealthCheck.data_too_large])


def one_line(exc: BaseException) -> str:
    """The error's text, checked to be one non-empty line (what the command line prints after `lanes-tui: `)."""
    text = str(exc)
    assert text.strip(), f"{type(exc).__name__} with no message"
    assert len(text.splitlines()) == 1, f"error of {len(text.splitlines())} lines: {text!r}"
    return text


def outcome(call: Callable[[], T], *errors: type[BaseException]) -> T | None:
    """`call()`, or None when it raised one of `errors` with a one-line message; anything else propagates."""
    try:
        return call()
    except errors as exc:
        one_line(exc)
        return None


# --- strategies ----------------------------------------------------------------------------------

#: Any character, surrogates and control characters included (a JSON file can hold `"\ud800"`).
ANY_CHAR = st.characters(exclude_categories=())
TEXT = st.text(ANY_CHAR, max_size=12)
#: Numbers a reader must survive: NaN and infinities, -0.0, and integers no float can hold.
NUMBERS = st.one_of(
    st.integers(),
    st.floats(allow_nan=True, allow_infinity=True),
    st.sampled_from([0, -1, 2**31, 2**63, -(2**63) - 1, 10**400, -(10**400), 1e308, -0.0, 5e-324]),
)
SCALARS = st.one_of(st.none(), st.booleans(), NUMBERS, TEXT)
JSON = st.recursive(SCALARS, lambda inner: st.lists(inner, max_size=3) | st.dictionaries(TEXT, inner, max_size=3),
                    max_leaves=8)


def nested(depth: int, leaf: Any = 0) -> Any:
    """`[[[…leaf…]]]`: deeper than the JSON decoder's (or a later encoder's) recursion limit for big depths."""
    value = leaf
    for _ in range(depth):
        value = [value]
    return value


def writer_breaking_depth() -> int:
    """Nesting the JSON decoder (one level of recursion a level) reads from here, but `asdict` and
    `json.dumps` of a record (two or more a level) cannot write back: it depends on the stack in use."""
    return (sys.getrecursionlimit() - len(inspect.stack(0))) * 2 // 3


def deep_json(depth: int) -> bytes:
    """A JSON file nested `depth` levels deep, without building the value (json.dumps would recurse)."""
    return b"[" * depth + b"]" * depth


def file_bytes(values: st.SearchStrategy[Any]) -> st.SearchStrategy[bytes]:
    """What a file may hold: the JSON of a value, that JSON cut short, or arbitrary bytes."""
    encoded = values.map(lambda v: json.dumps(v).encode())
    return st.one_of(
        encoded, encoded,  # twice: mostly near-valid content, that is where parsers go wrong
        st.tuples(encoded, st.integers(0, 200)).map(lambda pair: pair[0][:pair[1]]),
        st.binary(max_size=64),
        st.sampled_from([b"", b"\xff\xfe", b"\x00", b"{", deep_json(5000), deep_json(900)]),
    )


@st.composite
def mutated(draw: st.DrawFn, base: Mapping[str, Any], variants: Mapping[str, st.SearchStrategy[Any]]) -> Any:
    """`base` with some fields deleted or replaced (by a field's own variants or any JSON), some keys added;
    sometimes not an object at all."""
    if draw(st.integers(0, 19)) == 0:
        return draw(JSON)
    data: dict[str, Any] = {}
    for key, value in base.items():
        choice = draw(st.integers(0, 9))
        if choice == 0:
            continue
        if choice <= 2:
            data[key] = draw(variants.get(key, JSON) | JSON)
        else:
            data[key] = value
    data.update(draw(st.dictionaries(TEXT, JSON, max_size=2)))
    return data


# --- 1. the config ---------------------------------------------------------------------------------

PROVIDER_KEYS = ("argv", "prompt", "model", "effort", "max", "channel", "budget_patterns", "config_patterns", "env")
TOML_TEXT = st.text(st.characters(exclude_categories=("Cs",)), max_size=12)
TOML_SCALARS = st.one_of(
    st.booleans(), TOML_TEXT, st.datetimes(), st.dates(), st.times(),
    st.integers(min_value=-(2**70), max_value=2**70), st.floats(allow_nan=True, allow_infinity=True),
    st.sampled_from([10**400, -(10**400), 0, -1, 0.5, float("nan"), float("inf"), ""]),
)
TOML_VALUES = st.recursive(TOML_SCALARS,
                           lambda inner: st.lists(inner, max_size=3) | st.dictionaries(TOML_TEXT, inner, max_size=3),
                           max_leaves=6)
SECONDS = st.one_of(st.integers(-5, 10**6), st.floats(allow_nan=True, allow_infinity=True),
                    st.sampled_from([10**400, 2**63, True, "5", 0, 0.0]))
WORDS = st.sampled_from(["sim", "claude", "codex", "gemini", "aider", "mine", "x", "", " ", "sim\n", "ab cd"])
ARGV_PARTS = st.one_of(TOML_TEXT, st.sampled_from([
    "{python}", "{model}", "{modle}", "{ prompt }", '{"a": 1}', "danger-full-access", "my-agent", "{worktree}", "",
]))
PATTERNS = st.one_of(TOML_TEXT, st.sampled_from([
    "(", "[", "a{4294967296}", "(" * 1000 + ")" * 1000, "(?P<a>x)(?P=b)", r"\N{NO SUCH NAME}", "ok", "(?i)x",
    "a**", "x{2,1}",
]))
ENV_NAMES = st.one_of(TOML_TEXT, st.sampled_from(["MY_TOOL", "MY_*", "LANES_X", "CLAUDECODE", "A-B", "*", "A\n"]))
ROOTS = st.one_of(TOML_TEXT, st.sampled_from([
    "~", "~/wt", "~nosuchuser-xyz/wt", "~/../../x", "relative/wt", ".", "..", "/", "/tmp/wt", "wt\x00x", "~\x00",
    "/tmp/" + "x" * 300, "sub\ndir", "\u2028",
]))


def lanes_table() -> st.SearchStrategy[dict[str, Any]]:
    return st.fixed_dictionaries({}, optional={
        "worktree_root": ROOTS | TOML_VALUES,
        "max_parallel": st.integers(-3, 10**6) | st.sampled_from([10**400, 2**63, True]) | TOML_VALUES,
        "timeout_s": SECONDS | TOML_VALUES,
        "idle_timeout_s": SECONDS,
        "sample_s": SECONDS,
        "warn_idle_s": SECONDS,
        "protected_branches": st.lists(WORDS | TOML_TEXT, max_size=3) | TOML_VALUES,
        "target_branch": WORDS | TOML_VALUES,
    })


def provider_table() -> st.SearchStrategy[dict[str, Any]]:
    return st.fixed_dictionaries({}, optional={
        "argv": st.lists(ARGV_PARTS, max_size=4) | TOML_VALUES,
        "prompt": st.sampled_from([*PROMPT_MODES, "file", ""]) | TOML_VALUES,
        "model": TOML_TEXT | TOML_VALUES,
        "effort": TOML_TEXT,
        "max": st.integers(-2, 10**6) | st.sampled_from([10**400, True]) | TOML_VALUES,
        "channel": st.sampled_from([*CHANNELS, "json", ""]) | TOML_VALUES,
        "budget_patterns": st.lists(PATTERNS, max_size=3) | TOML_VALUES,
        "config_patterns": st.lists(PATTERNS, max_size=3),
        "env": st.lists(ENV_NAMES, max_size=3) | TOML_VALUES,
        "unknown_key": TOML_VALUES,
    })


CONFIG_DOCS = st.fixed_dictionaries({}, optional={
    "lanes": lanes_table() | TOML_VALUES,
    "chains": st.dictionaries(st.sampled_from(["backend", "docs", "new-type", "bad type", "x\n"]) | TOML_TEXT,
                              st.lists(WORDS, max_size=3) | TOML_VALUES, max_size=3),
    "providers": st.dictionaries(WORDS | TOML_TEXT, provider_table() | TOML_VALUES, max_size=3),
    "gates": st.fixed_dictionaries({}, optional={
        "commands": st.lists(TOML_TEXT, max_size=3) | TOML_VALUES, "timeout_s": SECONDS, "slots": st.integers(-1, 9),
        "slot_wait_s": SECONDS, "env": st.lists(ENV_NAMES, max_size=2), "commandz": TOML_VALUES,
    }) | TOML_VALUES,
    "keys": st.dictionaries(TOML_TEXT, TOML_TEXT | TOML_VALUES, max_size=3),
    "lane": TOML_VALUES,  # a typo of a table name
})
TOML_LINES = st.sampled_from([
    "[lanes]", "[providers.x]", "[[gates]]", "[chains]", "max_parallel = 6", "timeout_s = nan", "x = = 1",
    'argv = ["a", "{model}"]', '"""', "'''", "[", "]", "a.b.c = 1", "[keys]", 'accept = "A"', "=", "#", "\\",
    "max_parallel = 99999999999999999999999999", "worktree_root = '~nosuchuser-xyz'", "inf = inf",
])
CONFIG_TEXT = st.one_of(
    st.text(ANY_CHAR, max_size=80),
    st.lists(TOML_LINES | st.text(ANY_CHAR, max_size=20), max_size=8).map("\n".join),
    st.sampled_from(["x = " + "[" * 3000 + "]" * 3000, "x = " + "{a=" * 600 + "1" + "}" * 600,
                     "x = 1" + "0" * 5000, "[lanes]\nsample_s = 1" + "0" * 400,
                     '[lanes]\nworktree_root = "/tmp/a\\u0000b"']),
)


def toml_document(data: Mapping[str, Any]) -> str:
    return tomlkit.dumps(data)


def check_config(config: Config, repo: Path) -> None:
    """Every field of a Config the parser let through has its documented type and range."""
    lanes = config.lanes
    assert "\x00" not in str(lanes.worktree_root)
    assert lanes.worktree_root.is_absolute() and not lanes.worktree_root.resolve().is_relative_to(repo.resolve())
    assert type(lanes.max_parallel) is int and lanes.max_parallel >= 1
    for value, positive in ((lanes.timeout_s, True), (lanes.idle_timeout_s, False), (lanes.sample_s, True)):
        assert type(value) is float and math.isfinite(value) and (value > 0 if positive else value >= 0)
    assert lanes.warn_idle_s is None or (type(lanes.warn_idle_s) is float and math.isfinite(lanes.warn_idle_s)
                                         and lanes.warn_idle_s > 0)
    assert all(isinstance(b, str) and b.strip() for b in lanes.protected_branches)
    assert lanes.target_branch is None or (isinstance(lanes.target_branch, str) and lanes.target_branch.strip())
    for name, provider in config.providers.items():
        assert isinstance(provider, ProviderConfig) and re.fullmatch(r"[A-Za-z0-9_-]{1,64}", name)
        assert all(isinstance(part, str) for part in provider.argv) and provider.argv
        assert provider.prompt in PROMPT_MODES and provider.channel in CHANNELS
        assert type(provider.max) is int and provider.max >= 1
        assert isinstance(provider.model, str) and isinstance(provider.effort, str)
        for pattern in (*provider.budget_patterns, *provider.config_patterns):
            re.compile(pattern, re.IGNORECASE)
        assert all(re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*\*?", e) for e in provider.env)
    for task_type, chain in config.chains.items():
        assert re.fullmatch(r"[A-Za-z0-9_-]{1,64}", task_type)
        assert chain and len(set(chain)) == len(chain) and all(name in config.providers for name in chain)
    gates = config.gates
    assert all(isinstance(c, str) and c.strip() for c in gates.commands or ())  # None: detected
    assert all(isinstance(s.command, str) and s.name for s in gates.steps)
    assert type(gates.slots) is int and gates.slots >= 1
    assert math.isfinite(gates.timeout_s) and gates.timeout_s > 0 and math.isfinite(gates.slot_wait_s)
    assert all(re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*\*?", e) for e in gates.env)
    assert all(isinstance(k, str) and isinstance(v, str) for k, v in config.keys.items())


@pytest.fixture(scope="module")
def config_repo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("config-repo")


def parsed(text: str, repo: Path) -> Config | None:
    config = outcome(lambda: parse_config(text, path=repo / ".lanes" / "config.toml", repo=repo), ConfigError)
    if config is not None:
        check_config(config, repo)
    return config


@bounded(150)
@given(text=CONFIG_TEXT)
@example(text="x = " + "[" * 3000 + "]" * 3000)  # tomllib recursed until RecursionError
@example(text="x = 1" + "0" * 5000)  # more digits than int() converts: a bare ValueError
def test_config_text_is_a_config_or_one_config_error(config_repo: Path, text: str) -> None:
    parsed(text, config_repo)


@bounded(250)
@given(data=CONFIG_DOCS)
@example(data={"lanes": {"timeout_s": 10**400}})  # math.isfinite: OverflowError
@example(data={"lanes": {"worktree_root": "wt\x00x"}})  # Path.resolve: ValueError (embedded null byte)
@example(data={"lanes": {"worktree_root": "sub\ndir"}})  # "is inside the repository" printed on two lines
@example(data={"providers": {"sim": {"budget_patterns": ["a{4294967296}"]}}})  # re: OverflowError
@example(data={"providers": {"sim": {"config_patterns": ["(" * 1000 + ")" * 1000]}}})  # re: RecursionError
@example(data={"providers": {"sim\n": {"max": 1}}})  # a provider name with a newline passed `$`
def test_config_documents_over_the_real_keys(config_repo: Path, data: dict[str, Any]) -> None:
    parsed(toml_document(data), config_repo)


@bounded(40)
@given(content=st.one_of(CONFIG_TEXT.map(lambda t: t.encode("utf-8", "surrogatepass")),
                         CONFIG_DOCS.map(lambda d: toml_document(d).encode()), st.binary(max_size=64)))
def test_load_config_reads_any_bytes(config_repo: Path, content: bytes) -> None:
    path = config_repo / ".lanes" / "config.toml"
    path.parent.mkdir(exist_ok=True)
    path.write_bytes(content)
    config = outcome(lambda: load_config(config_repo), ConfigError)
    if config is not None:
        check_config(config, config_repo)
        assert config.path == path


def test_finding_the_line_of_a_key_is_linear() -> None:
    """An error names the line of its key; the scan used to take minutes on a long line in a string."""
    long_lines = ["[" + " " * 200_000, "[" + "a" * 100_000 + " b]", '[ "' + "a" * 100_000, "x" * 200_000]
    text = 'lanes = 1\nx = """\n' + "\n".join(long_lines) + '\n"""\n'
    start = time.monotonic()
    assert find_key_line(text, "lanes.max_parallel") == 1
    error = outcome(lambda: parse_config(text, path=None, repo=Path("/nonexistent-repo")), ConfigError)
    assert error is None
    assert time.monotonic() - start < 10


# --- 2. lane records -------------------------------------------------------------------------------

LANE = "fuzz-a1"
GOOD = "good-a1"


def record_dict(lane_id: str, repo: Path, root: Path, **changes: Any) -> dict[str, Any]:
    record = LaneRecord(id=lane_id, slug=lane_id.rsplit("-a", 1)[0], attempt=1, task_type="backend", prompt="do it",
                        chain=["sim"], repo=str(repo), worktree=str(worktree_path(root, repo, lane_id)),
                        branch=f"lane/{lane_id}", base_sha="0" * 40, target_branch="main", state="ready",
                        result="OK", providers_tried=[ProviderAttempt("sim", result="OK")], worktree_root=str(root))
    return {**record.to_json(), **changes}


#: The annotated type of each field, written out here so the check does not reuse the reader's own code.
STR = (str,)
OPT_STR = (str, type(None))
FIELD_TYPES: dict[str, tuple[type, ...]] = {
    "id": STR, "slug": STR, "task_type": STR, "prompt": STR, "repo": STR, "worktree": STR, "branch": STR,
    "base_sha": STR, "target_branch": STR, "state": STR, "state_reason": STR, "result": OPT_STR,
    "session_id": OPT_STR, "superseded_by": OPT_STR, "worktree_root": STR, "stall": (dict, type(None)),
}
ATTEMPT_TYPES: dict[str, tuple[type, ...]] = {
    "provider": STR, "model": STR, "result": OPT_STR, "reason": STR, "session_id": OPT_STR,
}


def is_int(value: Any, optional: bool = False) -> bool:
    return (value is None and optional) or (type(value) is int)


def is_finite(value: Any, optional: bool = False) -> bool:
    return (value is None and optional) or (type(value) in (int, float) and math.isfinite(float(value)))


def check_record(record: LaneRecord) -> None:
    """A record the reader accepted has exactly the annotated types, and states and results of the contract."""
    for name, types in FIELD_TYPES.items():
        assert type(getattr(record, name)) in types, (name, getattr(record, name))
    assert is_int(record.attempt) and record.attempt >= 1
    assert is_finite(record.created) and is_finite(record.updated)
    assert is_int(record.supervisor_pid, True) and is_int(record.agent_pid, True)
    assert is_finite(record.supervisor_start, True)
    assert isinstance(record.chain, list) and all(type(c) is str for c in record.chain)
    assert isinstance(record.scope, list) and all(type(c) is str for c in record.scope)
    assert record.stall is None or all(type(k) is str for k in record.stall)
    assert record.state in STATES and (record.result is None or record.result in RESULTS)
    for attempt in record.providers_tried:
        assert isinstance(attempt, ProviderAttempt)
        for name, types in ATTEMPT_TYPES.items():
            assert type(getattr(attempt, name)) in types, (name, getattr(attempt, name))
        assert is_int(attempt.returncode, True)
        assert all(is_finite(getattr(attempt, n), True) for n in ("started", "ended", "duration_s"))
    json.dumps(record.to_json())  # what every writer and `status --json` do with it next


RECORD_VARIANTS: dict[str, st.SearchStrategy[Any]] = {
    "id": st.sampled_from([LANE, GOOD, "other-a1", f"{LANE}\n", "", "../x"]),
    "state": st.sampled_from([*STATES, "bogus", ""]),
    "result": st.sampled_from([*RESULTS, "WIN", None]),
    "attempt": NUMBERS,
    "created": NUMBERS, "updated": NUMBERS, "supervisor_start": NUMBERS, "supervisor_pid": NUMBERS,
    "chain": st.lists(TEXT | JSON, max_size=3),
    "providers_tried": st.lists(mutated({"provider": "sim", "result": "OK", "started": 1.0, "returncode": 0},
                                        {"started": NUMBERS, "returncode": NUMBERS}), max_size=2),
    "stall": st.dictionaries(TEXT, JSON, max_size=2),
}
RECORD_BASE = record_dict(LANE, Path("/repo"), Path("/wt"))
RECORDS = mutated(RECORD_BASE, RECORD_VARIANTS)
#: In a fresh process (the command line) this decodes, but `asdict` and `json.dumps` recurse past the limit.
DEEP_STALL = {**RECORD_BASE, "stall": {"deep": nested(600)}}


@bounded(200)
@given(data=RECORDS)
@example(data={**RECORD_BASE, "created": 10**400})  # math.isfinite: OverflowError
@example(data={**RECORD_BASE, "providers_tried": [{"provider": "sim", "ended": -(10**400)}]})
def test_record_from_json_is_typed_or_one_error(data: Any) -> None:
    record = outcome(lambda: LaneRecord.from_json(data), LanesError)
    if record is not None:
        check_record(record)


@pytest.fixture()
def state_repo(tmp_path: Path) -> Path:
    repo = tmp_path / "repo"
    StatePaths(repo).ensure()
    return repo


def write_lane_file(repo: Path, lane_id: str, name: str, content: bytes) -> Path:
    folder = StatePaths(repo).lane(lane_id).dir
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    (folder / name).write_bytes(content)
    return folder / name


@bounded(120)
@given(content=file_bytes(RECORDS))
@example(content=json.dumps({**RECORD_BASE, "id": "good-a1"}).encode())  # another lane's id: never read as it
@example(content=deep_json(5000))  # the JSON decoder's RecursionError
def test_store_reads_its_own_lane_or_says_why_not(state_repo: Path, content: bytes) -> None:
    write_lane_file(state_repo, LANE, "lane.json", content)
    store = LaneStore(StatePaths(state_repo))
    record = outcome(lambda: store.read(LANE), LanesError)
    if record is not None:
        assert record.id == LANE
        check_record(record)
    records, problems = store.scan()
    assert [r.id for r in records] + list(problems) == [LANE]


@bounded(200)
@given(text=st.text(st.sampled_from("aZ09_-./\n\r\x00 é"), max_size=70) | TEXT)
@example(text="lane-a1\n")  # `$` also matches before a final newline
def test_lane_ids_are_exactly_the_documented_shape(text: str) -> None:
    """Letters and digits of any script (issue 17: slugs keep them) with their combining marks, `_` and
    `-`, not starting with `-` or a mark; 64 characters and 128 bytes at most; NFKC-normal."""
    lane_id = outcome(lambda: validate_lane_id(text), LanesError)
    if lane_id is not None:
        assert 1 <= len(lane_id) <= 64 and len(lane_id.encode()) <= 128
        assert lane_id[0].isalnum() or lane_id[0] == "_"
        assert all(c.isalnum() or c in "_-" or unicodedata.category(c).startswith("M") for c in lane_id)
        assert unicodedata.normalize("NFKC", lane_id) == lane_id


@pytest.fixture()
def two_lanes(state_repo: Path) -> Path:
    """A state folder with one good, settled lane (`good-a1`) besides the one the test fuzzes."""
    store = LaneStore(StatePaths(state_repo), FakeClock())
    store.create(LaneRecord.from_json(record_dict(GOOD, state_repo, state_repo.parent / "wt")))
    return state_repo


def assert_good_listed(repo: Path) -> None:
    statuses = {s.id: s for s in lane_statuses(repo)}
    assert set(statuses) == {GOOD, LANE}
    good = statuses[GOOD]
    assert good.problem is None and good.state == "ready", good
    json.dumps([s.to_json() for s in statuses.values()])  # what `status --json` prints
    for status in statuses.values():
        if status.problem is not None:
            one_line(LanesError(status.problem))
        shown = (fmt.tokens(status.tokens), fmt.cost(status.cost_usd, status.cost_estimated))  # the lanes table
        assert all(isinstance(text, str) for text in shown)


@bounded(30)
@given(content=file_bytes(RECORDS))
@example(content=json.dumps({**RECORD_BASE, "state": "running"}).encode())  # reconciled: its supervisor is gone
@example(content=json.dumps({**RECORD_BASE, "state": "checking", "worktree": "/"}).encode())
def test_status_lists_the_good_lane_beside_a_fuzzed_one(two_lanes: Path, content: bytes) -> None:
    write_lane_file(two_lanes, LANE, "lane.json", content)
    assert_good_listed(two_lanes)


def test_values_too_deep_to_write_back_are_refused_on_reading(two_lanes: Path, tmp_path: Path) -> None:
    """A value the decoder reads but no writer can write again (`status --json`, every record write,
    `inbox --json`) is refused where it is read, as a corrupt file, not where it is written."""
    depth = writer_breaking_depth()
    deep_record = {**RECORD_BASE, "stall": {"deep": nested(depth)}}
    write_lane_file(two_lanes, LANE, "lane.json", json.dumps(deep_record).encode())
    assert_good_listed(two_lanes)
    assert "nested more than" in one_line(outcome_error(lambda: LaneStore(StatePaths(two_lanes)).read(LANE)))
    root = tmp_path / "inbox"
    (root / LANE).mkdir(parents=True)
    (root / LANE / f"{QID}.json").write_text(json.dumps({**QUESTION_BASE, "correlation": {"a": nested(depth)}}))
    assert InboxStore(root, FakeClock()).list() == []


def outcome_error(call: Callable[[], Any]) -> LanesError:
    with pytest.raises(LanesError) as caught:
        call()
    return caught.value


def test_status_json_cli_with_fuzzed_records(repo: Path) -> None:
    """The real command on a few fuzzed records (a subprocess each: only a handful)."""
    store = LaneStore(StatePaths(repo), FakeClock())
    StatePaths(repo).ensure()
    store.create(LaneRecord.from_json(record_dict(GOOD, repo, repo.parent / "wt")))
    for content in (deep_json(5000), json.dumps(DEEP_STALL).encode(), json.dumps({**RECORD_BASE, "created": 10**400,
                                                                                  "id": LANE}).encode()):
        write_lane_file(repo, LANE, "lane.json", content)
        proc = cli(repo, "status", "--json")
        assert proc.returncode == 0 and "Traceback" not in proc.stderr, proc.stderr
        rows = {row["id"]: row for row in json.loads(proc.stdout)}
        assert rows[GOOD]["state"] == "ready" and rows[GOOD]["problem"] is None
        assert LANE in rows


# --- 3. the inbox ----------------------------------------------------------------------------------

QID = "q_0123456789ab"
GOOD_QID = "q_00000000000a"
QUESTION_BASE = Question(id=QID, lane=LANE, attempt=1, kind="choice", source="ask-cli", title="Which?", body="b",
                         options=(), default=None, deadline=None, correlation={}, created=1.0).to_record()
QUESTION_BASE["options"] = [{"id": "a", "label": "A"}, {"id": "b", "label": "B"}]
QUESTION_VARIANTS: dict[str, st.SearchStrategy[Any]] = {
    "id": st.sampled_from([QID, GOOD_QID, QID + "\n", "q_xyz", ""]),
    "lane": st.sampled_from([LANE, GOOD, LANE + "\n", "../x"]),
    "kind": st.sampled_from(["yesno", "choice", "text", "permission", "nope"]),
    "attempt": NUMBERS, "created": NUMBERS, "deadline": NUMBERS,
    "options": st.lists(mutated({"id": "a", "label": "A"}, {"id": st.sampled_from(["a", "a\n", "", "a b", "x" * 65])}),
                        max_size=3),
    "correlation": JSON,
}
QUESTIONS = mutated(QUESTION_BASE, QUESTION_VARIANTS)
ANSWER_BASE = {"id": QID, "value": "a", "by": "lead", "at": 2.0}
ANSWERS = mutated(ANSWER_BASE, {"id": st.sampled_from([QID, GOOD_QID]), "at": NUMBERS, "value": TEXT})
MARKS_ = mutated({"id": QID, "reason": "r", "value": "v", "at": 3.0}, {"at": NUMBERS, "reason": TEXT})

ID_PATTERNS = {"id": r"q_[0-9a-f]{12,64}", "lane": r"[A-Za-z0-9_][A-Za-z0-9_-]{0,63}",
               "option": r"[A-Za-z0-9_.:-]{1,64}"}


def check_question(question: Question, qid: str, lane: str) -> None:
    assert question.id == qid and question.lane == lane
    assert re.fullmatch(ID_PATTERNS["id"], question.id) and re.fullmatch(ID_PATTERNS["lane"], question.lane)
    assert type(question.attempt) is int and question.attempt >= 1
    assert all(type(getattr(question, n)) is str for n in ("kind", "source", "title", "body"))
    assert all(re.fullmatch(ID_PATTERNS["option"], o.id) and type(o.label) is str for o in question.options)
    assert question.default is None or type(question.default) is str
    assert is_finite(question.created) and is_finite(question.deadline, True)


@bounded(200)
@given(data=QUESTIONS)
@example(data={**QUESTION_BASE, "created": 10**400})  # math.isfinite: OverflowError
@example(data={**QUESTION_BASE, "options": [{"id": "a\n", "label": "A"}]})  # `$` let a newline in
def test_parse_question_is_typed_or_bad_file(data: Any) -> None:
    question = outcome(lambda: parse_question(data, qid=QID, lane=LANE), BadFile, LanesError)
    if question is not None:
        check_question(question, QID, LANE)


@bounded(120)
@given(answer=ANSWERS, mark=MARKS_)
@example(answer={**ANSWER_BASE, "at": 10**400}, mark={"at": -(10**400)})
def test_parse_answer_and_mark_are_typed_or_bad_file(answer: Any, mark: Any) -> None:
    parsed_answer = outcome(lambda: parse_answer(answer, qid=QID), BadFile, LanesError)
    if parsed_answer is not None:
        assert type(parsed_answer.value) is str and type(parsed_answer.by) is str and is_finite(parsed_answer.at)
    parsed_mark = outcome(lambda: parse_mark(mark, qid=QID), BadFile, LanesError)
    if parsed_mark is not None:
        assert set(parsed_mark) == {"reason", "value", "at"} and is_finite(parsed_mark["at"], True)


@bounded(100)
@given(content=file_bytes(QUESTIONS))
@example(content=deep_json(5000))
def test_read_json_file_is_a_value_or_bad_file(tmp_path: Path, content: bytes) -> None:
    path = tmp_path / "q.json"
    path.write_bytes(content)
    outcome(lambda: read_json_file(path, 1024 * 1024), BadFile)


def good_question() -> dict[str, Any]:
    return {**QUESTION_BASE, "id": GOOD_QID, "lane": GOOD}


INBOX_NAMES = st.sampled_from([
    (LANE, f"{QID}.json"), (LANE, f"{QID}.answer.json"), *((LANE, f"{QID}.{m}.json") for m in MARKS),
    (GOOD, f"{GOOD_QID}.answer.json"), *((GOOD, f"{GOOD_QID}.{m}.json") for m in MARKS),
    (LANE, "q_0123456789ac.json"), (LANE, "notes.txt"), ("not a lane", f"{QID}.json"),
])
INBOX_CONTENT = st.one_of(
    file_bytes(QUESTIONS), file_bytes(ANSWERS), file_bytes(MARKS_),
    st.sampled_from(["<symlink>", "<fifo>", "<dir>"]),
)


@bounded(60)
@given(files=st.lists(st.tuples(INBOX_NAMES, INBOX_CONTENT), max_size=5))
@example(files=[((LANE, f"{QID}.json"), json.dumps({**QUESTION_BASE, "created": 10**400}).encode())])
@example(files=[((GOOD, f"{GOOD_QID}.answer.json"), json.dumps({**ANSWER_BASE, "id": GOOD_QID,
                                                                  "at": 10**400}).encode())])
def test_inbox_lists_the_good_question_beside_fuzzed_files(tmp_path: Path,
                                                           files: list[tuple[tuple[str, str], bytes | str]]) -> None:
    root = Path(tempfile.mkdtemp(dir=tmp_path))
    (root / GOOD).mkdir()
    (root / GOOD / f"{GOOD_QID}.json").write_text(json.dumps(good_question()))
    for (lane, name), content in files:
        path = root / lane / name
        path.parent.mkdir(exist_ok=True)
        if os.path.lexists(path):
            continue
        if content == "<symlink>":
            path.symlink_to(root / GOOD / f"{GOOD_QID}.json")
        elif content == "<fifo>":
            os.mkfifo(path)
        elif content == "<dir>":
            path.mkdir()
        else:
            assert isinstance(content, bytes)
            path.write_bytes(content)
    store = InboxStore(root, FakeClock())
    views = store.list()
    assert GOOD_QID in [v.question.id for v in views]
    for view in views:
        check_question(view.question, view.question.id, view.question.lane)
        json.dumps(view.to_json())
    assert outcome(functools.partial(store.get, GOOD_QID), LanesError) is not None
    outcome(functools.partial(store.get, QID), LanesError)
    assert store.lane_is_waiting(LANE) in (True, False)


# --- 4. origin.json and cgroup.json ----------------------------------------------------------------

#: Placeholders the test fills in with its real folders: {repo}, {root}, {worktree} (the lane's derived
#: folder) and {other} (another lane's), so the strategies need no paths of their own.
def fill(value: Any, places: Mapping[str, str]) -> Any:
    if isinstance(value, str):
        for name, path in places.items():
            value = value.replace("{" + name + "}", path)
        return value
    if isinstance(value, list):
        return [fill(v, places) for v in value]
    if isinstance(value, dict):
        return {k: fill(v, places) for k, v in value.items()}
    return value


ORIGIN_BASE = {"id": LANE, "repo": "{repo}", "worktree_root": "{root}", "worktree": "{worktree}",
               "branch": f"lane/{LANE}", "created": 1.0, "lead_checkout": {"branch": "main"}}
ORIGIN_VARIANTS: dict[str, st.SearchStrategy[Any]] = {
    "id": st.sampled_from([LANE, GOOD, LANE + "\n"]),
    "repo": st.sampled_from(["{repo}", "/elsewhere", "rel", "{repo}\x00", "{repo}/.", "{repo}/sub/.."]),
    "worktree_root": st.sampled_from(["{root}", "/", "rel", "{root}/..", "{root}\x00", "{root}\nx", "{repo}",
                                      "{root}/x/.."]),
    "worktree": st.sampled_from(["{worktree}", "/", "{repo}", "{other}", "{root}/x/../y", "{worktree}\x00",
                                 "{worktree}/", "{worktree}\n"]),
    "branch": st.sampled_from([f"lane/{LANE}", "main", f"lane/{GOOD}", f"lane/{LANE}\n"]),
    "created": NUMBERS,
    "lead_checkout": mutated({"status": "s0", "branch": "main", "head": "0" * 40, "index": "i", "files": {"a": "x"}},
                             {"head": JSON, "files": JSON, "branch": JSON}),
}
LOCATION_RECORD_VARIANTS: dict[str, st.SearchStrategy[Any]] = {
    "repo": ORIGIN_VARIANTS["repo"], "worktree": ORIGIN_VARIANTS["worktree"], "branch": ORIGIN_VARIANTS["branch"],
    "worktree_root": ORIGIN_VARIANTS["worktree_root"] | st.just(""), "id": st.sampled_from([LANE, GOOD]),
}
LOCATION_RECORD_BASE = {**RECORD_BASE, "repo": "{repo}", "worktree": "{worktree}", "worktree_root": "{root}"}


def forge_digest(data: Any) -> Any:
    """The digest a forger would write over the fields as they are (when they make an origin at all)."""
    if not isinstance(data, dict):
        return data
    try:
        fields = {n: data[n] for n in ("id", "repo", "worktree_root", "worktree", "branch", "created")}
        digest = LaneOrigin(**fields, lead_checkout=data.get("lead_checkout") or {}).digest()
    except (KeyError, TypeError, ValueError):
        return data
    return {**data, "digest": digest}


@bounded(150)
@given(origin=mutated(ORIGIN_BASE, ORIGIN_VARIANTS), forged=st.booleans(),
       record=mutated(LOCATION_RECORD_BASE, LOCATION_RECORD_VARIANTS), raw=st.none() | st.binary(max_size=40))
@example(origin={**ORIGIN_BASE, "created": 10**400}, forged=True, record=LOCATION_RECORD_BASE, raw=None)
@example(origin={**ORIGIN_BASE, "repo": "{repo}\x00"}, forged=True, record=LOCATION_RECORD_BASE, raw=None)
@example(origin=ORIGIN_BASE, forged=True, record={**LOCATION_RECORD_BASE, "repo": "{repo}\x00"}, raw=None)
@example(origin=ORIGIN_BASE, forged=True, record={**LOCATION_RECORD_BASE, "worktree": "{worktree}\n"}, raw=None)
@example(origin=ORIGIN_BASE, forged=True, record={**LOCATION_RECORD_BASE, "worktree_root": "{root}\nx"}, raw=None)
@example(origin=ORIGIN_BASE, forged=True, record=LOCATION_RECORD_BASE, raw=deep_json(5000))
@example(origin={**ORIGIN_BASE, "lead_checkout": {"status": "s0", "branch": "main", "head": ["x"]}}, forged=True,
         record=LOCATION_RECORD_BASE, raw=None)  # `git merge-base` with a list argument: TypeError
def test_origin_never_yields_a_location_off_the_derived_shape(tmp_path: Path, origin: Any, forged: bool,
                                                               record: Any, raw: bytes | None) -> None:
    repo, root = tmp_path / "project", tmp_path / "worktrees"
    repo.mkdir(exist_ok=True)
    places = {"repo": str(repo), "root": str(root), "worktree": str(worktree_path(root, repo, LANE)),
              "other": str(worktree_path(root, repo, GOOD))}
    origin = fill(origin, places)
    lane = StatePaths(repo).lane(LANE)
    shutil.rmtree(lane.dir, ignore_errors=True)
    lane.dir.mkdir(parents=True)
    lane.origin.write_bytes(raw if raw is not None else json.dumps(forge_digest(origin) if forged else origin).encode())
    read = outcome(lambda: read_origin(lane), LanesError)
    if read is not None:
        assert all(type(getattr(read, n)) is str for n in ("id", "repo", "worktree_root", "worktree", "branch"))
        assert type(read.created) is float and math.isfinite(read.created) and isinstance(read.lead_checkout, dict)
        # What `check` and the accept plan do with its snapshot (`now` as `snapshot` makes it; repo is no git repo)
        now = {"branch": "main", "head": "1" * 40, "index": "i", "status": "s1", "submodules": "m", "files": {}}
        assert all(isinstance(line, str) for line in compare_checkout(repo, read.lead_checkout, now))
    parsed_record = outcome(lambda: LaneRecord.from_json(fill(record, places)), LanesError)
    if parsed_record is None or read is None:  # without an origin, git is asked: not what this test is about
        return
    where = outcome(lambda: locate_lane(repo, LANE, parsed_record), LanesError)
    if where is not None:
        assert where.branch == f"lane/{LANE}" and where.root.is_absolute() and ".." not in where.root.parts
        assert where.worktree == where.root / repo_key(repo) / LANE == worktree_path(where.root, repo, LANE)
        assert "\x00" not in str(where.root) and where.repo == repo.resolve()


def cgroup_mounts() -> list[tuple[str, Path]]:
    """(type, mount point) of each cgroup mount, read here independently of `cgroup._mounts`."""
    found = []
    for line in Path("/proc/self/mountinfo").read_text().splitlines():
        left, _, right = line.partition(" - ")
        kind = right.split()[0] if right else ""
        if kind in ("cgroup", "cgroup2"):
            found.append((kind, Path(left.split()[4].replace("\\040", " "))))
    return found


KEY = "project-0123abcd"
MOUNTS = cgroup_mounts()
MOUNT_POINTS = [str(m) for _, m in MOUNTS] or ["/sys/fs/cgroup"]
CGROUP_PATHS = st.one_of(
    st.tuples(st.sampled_from([*MOUNT_POINTS, "/", "/tmp", "", "/sys/fs"]),
              st.lists(st.sampled_from(["x", "..", ".", "lanes-tui", "", "user.slice"]), max_size=2),
              st.sampled_from(["lanes-tui", "lanes-tuix", "", "."]),
              st.sampled_from([KEY, "other-0000", "..", ""]),
              st.sampled_from([LANE, GOOD, "..", LANE + "/", LANE + "/.."])).map(
        lambda p: "/".join([p[0], *p[1], p[2], p[3], p[4]])),
    TEXT, JSON,
)
CGROUP_RECORDS = st.one_of(
    st.fixed_dictionaries({"mechanism": st.sampled_from(["cgroup-v2", "cgroup-v1", "none", "v2"]) | JSON,
                           "path": CGROUP_PATHS}),
    JSON,
)


def check_cgroup(found: cgroup.LaneCgroup | None) -> None:
    if found is None:
        return
    path = found.path
    assert path.parts[-3:] == ("lanes-tui", KEY, LANE) and ".." not in path.parts
    kind = "cgroup2" if found.mechanism == "cgroup-v2" else "cgroup"
    assert found.mechanism in ("cgroup-v2", "cgroup-v1")
    assert any(k == kind and path.is_relative_to(m) and path != m for k, m in MOUNTS), path


@bounded(150)
@given(data=CGROUP_RECORDS)
@example(data={"mechanism": "cgroup-v1", "path": f"/tmp/lanes-tui/{KEY}/{LANE}"})
@example(data={"mechanism": "cgroup-v2", "path": f"{MOUNT_POINTS[-1]}/../../tmp/lanes-tui/{KEY}/{LANE}"})
def test_cgroup_record_is_this_lanes_cgroup_or_nothing(data: Any) -> None:
    check_cgroup(cgroup.LaneCgroup.from_record(data, KEY, LANE))


@bounded(60)
@given(content=file_bytes(CGROUP_RECORDS))
@example(content=deep_json(5000))  # json.loads: RecursionError
def test_cgroup_json_file_is_read_or_ignored(tmp_path: Path, content: bytes) -> None:
    (tmp_path / cgroup.RECORD).write_bytes(content)
    check_cgroup(cgroup.read_record(tmp_path, KEY, LANE))


# --- 5. packet.json and meters.json --------------------------------------------------------------

PACKET_BASE = {
    "lane": LANE, "gates": [{"command": "pytest", "status": "passed"}], "gates_status": "passed",
    "changed_files": ["a.py"], "conflict_files": [], "review": "MISSING", "next": "review", "worktree_digest": "d",
}
PACKETS = mutated(PACKET_BASE, {"gates": st.lists(JSON, max_size=2), "changed_files": st.lists(JSON, max_size=2)})


@bounded(100)
@given(content=file_bytes(PACKETS))
@example(content=deep_json(5000))  # read_json: RecursionError
@example(content=json.dumps({**PACKET_BASE, "gates": 5}).encode())  # `for g in 5` in reconcile
@example(content=json.dumps({**PACKET_BASE, "gates": ["x"]}).encode())  # `"x".get` in recover
@example(content=json.dumps({**PACKET_BASE, "changed_files": "abc"}).encode())  # three files a, b and c
def test_packet_is_a_typed_object_or_none(state_repo: Path, content: bytes) -> None:
    write_lane_file(state_repo, LANE, "packet.json", content)
    packet = read_packet(StatePaths(state_repo).lane(LANE))
    if packet is None:
        return
    assert isinstance(packet, dict)
    assert isinstance(packet.get("gates", []), list) and all(isinstance(g, dict) for g in packet.get("gates", []))
    for name in ("changed_files", "conflict_files"):
        assert isinstance(packet.get(name, []), list) and all(type(f) is str for f in packet.get(name, []))
    for name in ("gates_status", "review", "next"):
        assert type(packet.get(name, "")) is str


COUNTS = NUMBERS | TEXT | st.none()
RUN = mutated({"provider": "sim", "input": 1, "output": 2, "cached_input": 0, "cache_write": 0, "usd": 0.1,
               "usd_source": "reported", "session_id": "s"},
              {"input": COUNTS, "output": COUNTS, "cached_input": COUNTS, "usd": COUNTS, "session_id": JSON})
METERS = mutated({"tokens": {"total": 3, "input": 1, "output": 2}, "cost_usd": 0.1, "cost_estimated": False,
                  "runs": [{"provider": "sim", "input": 1, "output": 2}]},
                 {"tokens": mutated({"total": 3, "input": 1}, {"total": COUNTS}) | NUMBERS | TEXT,
                  "cost_usd": COUNTS, "cost_estimated": JSON, "runs": st.lists(RUN, max_size=3) | JSON})


def check_tokens(tokens: Any) -> None:
    assert tokens is None or isinstance(tokens, Mapping)
    for value in (tokens or {}).values():
        assert type(value) is int and value >= 0


@bounded(80)
@given(content=file_bytes(METERS))
@example(content=json.dumps({"runs": [{"input": float("nan")}]}).encode())  # int(nan): ValueError
@example(content=json.dumps({"runs": [{"output": float("inf")}]}).encode())  # int(inf): OverflowError
@example(content=json.dumps({"tokens": {"total": "many"}, "cost_usd": "free"}).encode())  # the table's float()
@example(content=deep_json(5000))
def test_meters_file_read_back_is_typed(two_lanes: Path, content: bytes) -> None:
    lane = StatePaths(two_lanes).lane(GOOD)
    (lane.dir / "meters.json").write_bytes(content)
    (lane.dir / "samples.jsonl").write_bytes(b'{"idle_s": 1}\n' + content + b"\n")  # the newest sample, read back
    meter = RunMeter(lane.dir / "meters.json", FakeClock(), provider="sim", model="sonnet")
    snapshot = meter.snapshot()
    check_tokens(snapshot["tokens"])
    assert snapshot["cost_usd"] is None or is_finite(snapshot["cost_usd"])
    store = LaneStore(StatePaths(two_lanes))
    status = lane_status(store, store.read(GOOD))
    check_tokens(status.tokens)
    assert status.cost_usd is None or (type(status.cost_usd) is float and math.isfinite(status.cost_usd))
    assert type(status.cost_estimated) is bool
    shown = (fmt.tokens(status.tokens), fmt.cost(status.cost_usd, status.cost_estimated))  # what the table shows
    assert all(isinstance(text, str) for text in shown)
    json.dumps(status.to_json())

