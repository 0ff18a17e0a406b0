"""The inbox: state derived from files, answers normalised, hostile files skipped, and the CLI end to end."""

from __future__ import annotations

import asyncio
import json
import logging
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from lanes_tui.engine.core.clock import FakeClock
from lanes_tui.engine.core.errors import LanesError
from lanes_tui.engine.inbox.files import create_json_exclusive
from lanes_tui.engine.inbox.store import InboxStore, Option, QuestionView, wait_for_answer
from lanes_tui.engine.state.paths import StatePaths

LANE = "demo-a1"


@pytest.fixture()
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture()
def store(tmp_path: Path, clock: FakeClock) -> InboxStore:
    return InboxStore(tmp_path / "inbox", clock=clock, logger=logging.getLogger("test.inbox"))


def lane_dir(store: InboxStore, lane: str = LANE) -> Path:
    return store.root / lane


# --- asking and the record on disk ---------------------------------------------------------------


def test_ask_writes_the_record_and_the_question_is_open(store: InboxStore, clock: FakeClock) -> None:
    q = store.ask(LANE, kind="yesno", title="Deploy?", body="to staging", default="N", timeout_s=90,
                  attempt=2, correlation={"request_id": "r1"})
    record = json.loads((lane_dir(store) / f"{q.id}.json").read_text())
    assert record == {
        "id": q.id, "lane": LANE, "attempt": 2, "kind": "yesno", "source": "ask-cli", "title": "Deploy?",
        "body": "to staging", "options": [{"id": "yes", "label": "Yes"}, {"id": "no", "label": "No"}],
        "default": "no", "deadline": clock.time() + 90, "correlation": {"request_id": "r1"},
        "created": clock.time(), "schema": 1,  # the format version (core.schema)
    }
    view = store.get(q.id)
    assert (view.state, view.answer) == ("open", None)
    assert store.lane_is_waiting(LANE)
    assert view.to_json()["state"] == "open" and "answer" not in view.to_json()
    assert [v.question.id for v in store.open_questions(LANE)] == [q.id]


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"kind": "yesno", "title": "x" * 501}, "title"),
        ({"kind": "text", "title": "t", "body": "b" * (64 * 1024 + 1)}, "body"),
        ({"kind": "maybe", "title": "t"}, "kind"),
        ({"kind": "yesno", "title": "  "}, "title"),
        ({"kind": "yesno", "title": "t", "options": ["a"]}, "no options"),
        ({"kind": "choice", "title": "t"}, "at least one option"),
        ({"kind": "choice", "title": "t", "options": ["a", "b"], "default": "c"}, "not one of"),
        ({"kind": "yesno", "title": "t", "source": "telepathy"}, "source"),
        ({"kind": "yesno", "title": "t", "timeout_s": -1}, "timeout"),
        ({"kind": "choice", "title": "t", "options": [Option("a/b", "A")]}, "option id"),
    ],
)
def test_ask_refuses_bad_questions(store: InboxStore, kwargs: dict[str, object], message: str) -> None:
    with pytest.raises(LanesError, match=message):
        store.ask(LANE, **kwargs)  # type: ignore[arg-type]


def test_ask_refuses_a_lane_id_that_is_a_path(store: InboxStore, tmp_path: Path) -> None:
    with pytest.raises(LanesError, match="invalid lane id"):
        store.ask("../escape", kind="yesno", title="t")
    assert not (tmp_path / "escape").exists()


def test_choice_options_get_ids_from_their_labels(store: InboxStore) -> None:
    q = store.ask(LANE, kind="choice", title="db?", options=["Postgres", "SQLite", "Use MySQL 8", "SQLite"])
    assert [(o.id, o.label) for o in q.options] == [
        ("Postgres", "Postgres"), ("SQLite", "SQLite"), ("Use-MySQL-8", "Use MySQL 8"),
        ("SQLite-2", "SQLite"),
    ]


# --- answers -------------------------------------------------------------------------------------


@pytest.mark.parametrize(("given", "expected"), [
    ("yes", "yes"), ("Y", "yes"), ("allow", "yes"), (" TRUE ", "yes"),
    ("no", "no"), ("n", "no"), ("Deny", "no"), ("false", "no"),
])
def test_yes_no_answers_are_normalised(store: InboxStore, given: str, expected: str) -> None:
    for kind in ("yesno", "permission"):
        q = store.ask(LANE, kind=kind, title="ok?")
        assert store.answer(q.id, given) == expected
        assert store.get(q.id).answer == expected


def test_invalid_answers_are_refused_with_the_valid_ones(store: InboxStore) -> None:
    yn = store.ask(LANE, kind="yesno", title="ok?")
    with pytest.raises(LanesError, match="answer yes or no"):
        store.answer(yn.id, "perhaps")
    choice = store.ask(LANE, kind="choice", title="db?", options=["postgres", "Big Table"])
    with pytest.raises(LanesError, match=r"answer one of: postgres, Big-Table \(Big Table\)"):
        store.answer(choice.id, "mysql")
    text = store.ask(LANE, kind="text", title="name?")
    with pytest.raises(LanesError, match="empty"):
        store.answer(text.id, "   ")
    assert all(v.state == "open" for v in store.list(LANE))


def test_choice_takes_an_id_or_a_label_and_returns_the_id(store: InboxStore) -> None:
    q = store.ask(LANE, kind="choice", title="db?", options=["postgres", Option("lite", "SQLite")])
    assert store.answer(q.id, "sqlite") == "lite"
    q2 = store.ask(LANE, kind="choice", title="db?", options=["postgres", Option("lite", "SQLite")])
    assert store.answer(q2.id, "POSTGRES") == "postgres"


def test_text_answer_is_kept_as_typed(store: InboxStore) -> None:
    q = store.ask(LANE, kind="text", title="flag name?")
    assert store.answer(q.id, "new-login  flow", by="dashboard") == "new-login  flow"
    view = store.get(q.id)
    assert (view.state, view.answer, view.answered_by) == ("answered", "new-login  flow", "dashboard")
    assert view.to_json()["answer"] == "new-login  flow"


def test_open_answered_delivered(store: InboxStore, clock: FakeClock) -> None:
    q = store.ask(LANE, kind="yesno", title="ok?")
    clock.advance(5)
    store.answer(q.id, "y")
    view = store.get(q.id)
    assert (view.state, view.answered_at) == ("answered", clock.time())
    assert store.lane_is_waiting(LANE), "answered but not delivered: the asker is about to pick it up"
    store.deliver(q.id)
    store.deliver(q.id)  # idempotent
    assert store.get(q.id).state == "delivered"
    assert json.loads((lane_dir(store) / f"{q.id}.delivered.json").read_text())["value"] == "yes"
    assert not store.lane_is_waiting(LANE)


def test_refusals_name_the_problem(store: InboxStore) -> None:
    with pytest.raises(LanesError, match="no question q_0123456789ab"):
        store.get("q_0123456789ab")
    for bad in ("../../etc/passwd", "q_../x", "q_ABCDEF123456", "q_123", ""):
        with pytest.raises(LanesError, match="invalid question id"):
            store.answer(bad, "yes")
    q = store.ask(LANE, kind="yesno", title="ok?")
    store.answer(q.id, "yes")
    with pytest.raises(LanesError, match="already answered"):
        store.answer(q.id, "no")
    store.deliver(q.id)
    with pytest.raises(LanesError, match="delivered"):
        store.answer(q.id, "no")
    with pytest.raises(LanesError, match="only an answered question"):
        store.deliver(store.ask(LANE, kind="yesno", title="open").id)


def test_the_first_answer_file_wins(tmp_path: Path) -> None:
    path = tmp_path / "q_0123456789ab.answer.json"
    assert create_json_exclusive(path, {"value": "yes"})
    assert not create_json_exclusive(path, {"value": "no"})
    assert json.loads(path.read_text())["value"] == "yes"
    assert [p.name for p in tmp_path.iterdir()] == [path.name], "no temp file left behind"


# --- expiry, cancel, orphan and precedence -------------------------------------------------------


def test_expire_applies_the_default(store: InboxStore) -> None:
    q = store.ask(LANE, kind="yesno", title="ok?", default="yes")
    assert store.expire(q.id) == "yes"
    view = store.get(q.id)
    assert (view.state, view.answer, view.answered_by) == ("expired", "yes", "default")
    with pytest.raises(LanesError, match="expired"):
        store.answer(q.id, "no")
    with pytest.raises(LanesError, match="not open"):
        store.expire(q.id)
    assert not store.lane_is_waiting(LANE)


def test_expire_denies_a_permission_without_default(store: InboxStore) -> None:
    perm = store.ask(LANE, kind="permission", title="Run rm?", source="claude-stdio")
    assert store.expire(perm.id) == "no"
    text = store.ask(LANE, kind="text", title="name?")
    assert store.expire(text.id) is None
    assert store.get(text.id).state == "expired" and store.get(text.id).answer is None


def test_expired_outranks_a_late_answer(store: InboxStore, clock: FakeClock) -> None:
    q = store.ask(LANE, kind="yesno", title="ok?", default="no")
    answered = store.answer(q.id, "yes")
    assert answered == "yes"
    # The asker saw "open" just before the answer landed and expired it: its mark decides.
    (lane_dir(store) / f"{q.id}.expired.json").write_text(json.dumps({"id": q.id, "value": "no", "at": 1}))
    view = store.get(q.id)
    assert (view.state, view.answer) == ("expired", "no")


def test_cancel(store: InboxStore) -> None:
    q = store.ask(LANE, kind="yesno", title="ok?")
    store.answer(q.id, "yes")
    store.cancel(q.id, "the prompt vanished")
    view = store.get(q.id)
    assert (view.state, view.answer, view.reason) == ("cancelled", None, "the prompt vanished")
    with pytest.raises(LanesError, match="cancelled: the prompt vanished"):
        store.answer(q.id, "no")
    with pytest.raises(LanesError, match="only an answered"):
        store.deliver(q.id)
    assert not store.lane_is_waiting(LANE)


def test_orphan_lane_and_answer_an_orphan(store: InboxStore, clock: FakeClock) -> None:
    open_q = store.ask(LANE, kind="yesno", title="first?")
    clock.advance(1)
    answered_q = store.ask(LANE, kind="text", title="second?")
    store.answer(answered_q.id, "hello")
    clock.advance(1)
    done_q = store.ask(LANE, kind="yesno", title="third?")
    store.answer(done_q.id, "no")
    store.deliver(done_q.id)
    other = store.ask("other-a1", kind="yesno", title="elsewhere")

    assert store.orphan_lane(LANE, "supervisor gone") == [open_q.id, answered_q.id]
    assert store.orphan_lane(LANE, "again") == []
    assert not store.lane_is_waiting(LANE)
    assert store.get(other.id).state == "open" and store.lane_is_waiting("other-a1")
    assert store.get(done_q.id).state == "delivered"

    orphan = store.get(open_q.id)
    assert (orphan.state, orphan.reason, orphan.answer) == ("orphaned", "supervisor gone", None)
    assert store.answer(open_q.id, "Allow") == "yes", "an orphan's answer starts the next attempt"
    after = store.get(open_q.id)
    assert (after.state, after.answer) == ("orphaned", "yes")
    assert after.to_json()["answer"] == "yes" and after.to_json()["reason"] == "supervisor gone"
    with pytest.raises(LanesError, match="already answered"):
        store.answer(open_q.id, "no")
    store.deliver(open_q.id)  # the engine took the answer into the next attempt
    assert store.get(open_q.id).state == "delivered"


def test_precedence_when_every_file_exists(store: InboxStore) -> None:
    q = store.ask(LANE, kind="yesno", title="ok?")
    folder = lane_dir(store)
    order = ["answer", "orphaned", "expired", "cancelled", "delivered"]
    expected = ["answered", "orphaned", "expired", "cancelled", "delivered"]
    for suffix, state in zip(order, expected, strict=True):
        content = {"id": q.id, "value": "yes", "by": "lead", "at": 1.0, "reason": "r"}
        (folder / f"{q.id}.{suffix}.json").write_text(json.dumps(content))
        assert store.get(q.id).state == state


def test_list_is_oldest_first_and_filters(store: InboxStore, clock: FakeClock) -> None:
    ids = []
    for lane in ("b-a1", "a-a1", "b-a1"):
        ids.append(store.ask(lane, kind="yesno", title=lane).id)
        clock.advance(1)
    store.answer(ids[0], "yes")
    assert [v.question.id for v in store.list()] == ids
    assert [v.question.id for v in store.list("b-a1")] == [ids[0], ids[2]]
    assert [v.question.id for v in store.list(states={"open"})] == ids[1:]
    assert store.list("nobody-a1") == []
    with pytest.raises(LanesError, match="unknown question state"):
        store.list(states={"pending"})


def test_an_empty_or_missing_inbox(tmp_path: Path) -> None:
    store = InboxStore(tmp_path / "nothing-here")
    assert store.list() == [] and not store.lane_is_waiting(LANE)


async def test_wait_for_answer_times_out_on_the_fake_clock(store: InboxStore, clock: FakeClock) -> None:
    q = store.ask(LANE, kind="yesno", title="ok?")
    start = clock.monotonic()
    view = await wait_for_answer(store, q.id, timeout_s=30, clock=clock)
    assert view.state == "open" and clock.monotonic() - start == pytest.approx(30)


async def test_wait_for_answer_returns_once_answered(store: InboxStore, clock: FakeClock) -> None:
    q = store.ask(LANE, kind="yesno", title="ok?")
    waiter = asyncio.create_task(wait_for_answer(store, q.id, timeout_s=None, clock=clock))
    for _ in range(5):
        await asyncio.sleep(0)
    assert not waiter.done()
    store.answer(q.id, "no")
    view = await asyncio.wait_for(waiter, 5)
    assert (view.state, view.answer) == ("answered", "no")


# --- hostile and malformed files -----------------------------------------------------------------


def _write(folder: Path, name: str, content: str | bytes) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    path.write_bytes(content if isinstance(content, bytes) else content.encode())
    return path


def _record(store: InboxStore, **changes: object) -> dict[str, object]:
    good = store.ask("template-a1", kind="yesno", title="template")
    record = json.loads((store.root / "template-a1" / f"{good.id}.json").read_text())
    record.update({"lane": LANE, **changes})
    return record


@pytest.mark.parametrize(("name", "make", "reason"), [
    ("q_000000000001.json", lambda r: "{not json", "not valid JSON"),
    ("q_000000000002.json", lambda r: json.dumps({**r, "id": "../../etc/passwd"}), "not a question id"),
    ("q_000000000003.json", lambda r: json.dumps({**r, "id": "q_999999999999"}), "does not match"),
    ("q_000000000004.json", lambda r: json.dumps({**r, "id": "q_000000000004", "body": "x" * 70_000}),
     "body is larger"),
    ("q_000000000005.json", lambda r: json.dumps({**r, "id": "q_000000000005", "attempt": "1"}), "attempt"),
    ("q_000000000006.json", lambda r: json.dumps({**r, "id": "q_000000000006", "lane": "other-a1"}),
     "does not match the folder"),
    ("q_000000000007.json", lambda r: json.dumps([1, 2]), "not a JSON object"),
    ("q_000000000008.json", lambda r: " " * (1024 * 1024 + 1), "more than the limit"),
    ("q_000000000009.json", lambda r: b"\xff\xfe", "not valid JSON"),
    ("q_00000000000a.json", lambda r: json.dumps({**r, "id": "q_00000000000a", "created": float("nan")}),
     "finite"),
])
def test_a_malformed_question_is_skipped_and_logged(
    store: InboxStore, caplog: pytest.LogCaptureFixture, name: str, make: object, reason: str,
) -> None:
    record = _record(store)
    path = _write(lane_dir(store), name, make(record))  # type: ignore[operator]
    good = store.ask(LANE, kind="yesno", title="good one")
    with caplog.at_level(logging.WARNING, logger="test.inbox"):
        assert [v.question.id for v in store.list(LANE)] == [good.id]
        assert store.lane_is_waiting(LANE)
        store.list(LANE)
    warnings = [r.getMessage() for r in caplog.records if str(path) in r.getMessage()]
    assert len(warnings) == 1, "logged once, not on every refresh"
    assert reason in warnings[0]
    with pytest.raises(LanesError, match="cannot be read"):
        store.get(name.removesuffix(".json"))


def test_only_bad_files_mean_not_waiting(store: InboxStore) -> None:
    _write(lane_dir(store), "q_000000000001.json", "{")
    assert not store.lane_is_waiting(LANE)


def test_links_fifos_folders_and_strange_names_are_skipped(
    store: InboxStore, tmp_path: Path, caplog: pytest.LogCaptureFixture,
) -> None:
    folder = lane_dir(store)
    secret = _write(tmp_path, "outside.json", json.dumps(_record(store, id="q_000000000001")))
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "q_000000000001.json").symlink_to(secret)
    os.mkfifo(folder / "q_000000000002.json")  # reading it must not block
    (folder / "q_000000000003.json").mkdir()
    _write(folder, "notes.txt", "hi")
    (store.root / "linked-a1").symlink_to(folder)
    _write(store.root, "bad name", "")
    with caplog.at_level(logging.WARNING, logger="test.inbox"):
        assert [v.question.lane for v in store.list()] == ["template-a1"]
        assert not store.lane_is_waiting(LANE)
    text = "\n".join(r.getMessage() for r in caplog.records)
    for expected in ("q_000000000001.json: is a symlink", "q_000000000002.json: is not a regular file",
                     "q_000000000003.json: is not a regular file", "notes.txt: name is not an inbox file",
                     "linked-a1: is not a plain folder", "bad name: name is not a lane id"):
        assert expected in text


def test_a_malformed_answer_leaves_the_question_open(
    store: InboxStore, caplog: pytest.LogCaptureFixture,
) -> None:
    q = store.ask(LANE, kind="yesno", title="ok?")
    bad = _write(lane_dir(store), f"{q.id}.answer.json", json.dumps({"id": q.id, "value": 1}))
    with caplog.at_level(logging.WARNING, logger="test.inbox"):
        assert store.get(q.id).state == "open"
        with pytest.raises(LanesError, match="cannot be read"):
            store.answer(q.id, "yes")
    assert any(str(bad) in r.getMessage() and "'value'" in r.getMessage() for r in caplog.records)


def test_a_malformed_mark_still_counts(store: InboxStore, caplog: pytest.LogCaptureFixture) -> None:
    q = store.ask(LANE, kind="yesno", title="ok?")
    _write(lane_dir(store), f"{q.id}.cancelled.json", "garbage")
    with caplog.at_level(logging.WARNING, logger="test.inbox"):
        view = store.get(q.id)
    assert view.state == "cancelled" and not store.lane_is_waiting(LANE)
    assert any("cancelled.json" in r.getMessage() for r in caplog.records)


# --- the command line, as real processes ---------------------------------------------------------

CLI = [sys.executable, "-c", "from lanes_tui.app.cli.inbox import _main; raise SystemExit(_main())"]


@pytest.fixture()
def lane_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A state dir and the environment a lane gets; returns the state dir (`LANES_HOME`)."""
    home = tmp_path / "repo" / ".lanes" / "state"
    home.mkdir(parents=True)
    monkeypatch.setenv("LANES_HOME", str(home))
    monkeypatch.setenv("LANES_LANE", LANE)
    monkeypatch.delenv("LANES_ATTEMPT", raising=False)
    return home


def run_cli(*args: str, cwd: Path | None = None, timeout: float = 30) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*CLI, *args], capture_output=True, text=True, timeout=timeout, cwd=cwd)


class Asker:
    """`lanes-tui ask …` running in the background; always reaped, so no test leaves it behind."""

    def __init__(self, *args: str) -> None:
        self.proc = subprocess.Popen([*CLI, "ask", *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                     text=True)

    def result(self, timeout: float = 30) -> tuple[int, str, str]:
        out, err = self.proc.communicate(timeout=timeout)
        return self.proc.returncode, out, err

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.communicate()


@pytest.fixture()
def asker() -> Iterator[type[Asker]]:
    started: list[Asker] = []

    class Tracked(Asker):
        def __init__(self, *args: str) -> None:
            super().__init__(*args)
            started.append(self)

    yield Tracked
    for item in started:
        item.close()


def wait_for_question(store: InboxStore, lane: str = LANE, timeout: float = 20) -> QuestionView:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = store.list(lane, {"open"})
        if found:
            return found[-1]
        time.sleep(0.02)
    raise AssertionError("the ask helper never wrote a new question")


def test_cli_ask_yes_no(lane_env: Path, asker: type[Asker]) -> None:
    store = InboxStore(lane_env / "inbox")
    first = asker("Deploy to staging?", "--yes-no")
    q = wait_for_question(store)
    assert (q.question.kind, q.question.source, q.question.attempt) == ("yesno", "ask-cli", 1)
    store.answer(q.question.id, "yes")
    code, out, _ = first.result()
    assert (code, out.strip()) == (0, "yes")
    assert (lane_env / "inbox" / LANE / f"{q.question.id}.delivered.json").is_file()
    assert store.get(q.question.id).state == "delivered"

    second = asker("Deploy to production?")
    q2 = wait_for_question(store)
    assert q2.question.id != q.question.id
    answered = run_cli("answer", q2.question.id, "no")
    assert (answered.returncode, answered.stdout.strip()) == (0, f"answered {q2.question.id} no")
    code, out, _ = second.result()
    assert (code, out.strip()) == (1, "no")


def test_cli_ask_choice_and_text(lane_env: Path, asker: type[Asker], monkeypatch: pytest.MonkeyPatch) -> None:
    store = InboxStore(lane_env / "inbox")
    monkeypatch.setenv("LANES_ATTEMPT", "3")
    choice = asker("Which database?", "--choice", "postgres, sqlite")
    q = wait_for_question(store)
    assert [o.id for o in q.question.options] == ["postgres", "sqlite"] and q.question.attempt == 3
    assert run_cli("answer", q.question.id, "SQLite").returncode == 0
    code, out, _ = choice.result()
    assert (code, out.strip()) == (0, "sqlite")

    text = asker("Name for the flag?", "--text", "--body", "one word")
    q = wait_for_question(store)
    assert run_cli("answer", q.question.id, "new", "login").returncode == 0
    code, out, _ = text.result()
    assert (code, out) == (0, "new login\n")


def test_cli_timeout_with_default_expires(lane_env: Path) -> None:
    done = run_cli("ask", "Deploy?", "--yes-no", "--default", "no", "--timeout", "0.3")
    assert (done.returncode, done.stdout.strip()) == (1, "no")
    (view,) = InboxStore(lane_env / "inbox").list(LANE)
    assert (view.state, view.answer) == ("expired", "no")


def test_cli_timeout_without_default_then_wait(lane_env: Path, asker: type[Asker]) -> None:
    store = InboxStore(lane_env / "inbox")
    done = run_cli("ask", "Deploy?", "--timeout", "0.3")
    assert done.returncode == 3
    qid = done.stdout.strip()
    assert store.get(qid).state == "open" and f"ask --wait {qid}" in done.stderr
    again = asker("--wait", qid, "--timeout", "30")
    time.sleep(0.2)
    store.answer(qid, "allow")
    code, out, _ = again.result()
    assert (code, out.strip()) == (0, "yes")
    assert store.get(qid).state == "delivered"
    repeat = run_cli("ask", "--wait", qid)  # already delivered: the same answer again, at once
    assert (repeat.returncode, repeat.stdout.strip()) == (0, "yes")


def test_cli_cancelled_and_orphaned_exit_4(lane_env: Path, asker: type[Asker]) -> None:
    store = InboxStore(lane_env / "inbox")
    first = asker("Go?")
    q = wait_for_question(store)
    store.cancel(q.question.id, "the agent moved on")
    code, _, err = first.result()
    assert code == 4 and "cancelled: the agent moved on" in err

    second = asker("Go again?")
    q = wait_for_question(store)
    assert store.orphan_lane(LANE, "lane died") == [q.question.id]
    code, _, err = second.result()
    assert code == 4 and "orphaned" in err


def test_cli_refusals_are_one_line_and_exit_2(lane_env: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    unknown = run_cli("answer", "q_0123456789ab", "yes")
    assert unknown.returncode == 2
    assert unknown.stderr.startswith("lanes-tui: no question q_0123456789ab")
    assert unknown.stderr.count("\n") == 1
    assert run_cli("answer", "../../etc", "yes").returncode == 2
    monkeypatch.delenv("LANES_LANE")
    missing = run_cli("ask", "Deploy?")
    assert missing.returncode == 2 and missing.stderr == "lanes-tui: LANES_LANE not set — " \
        "run lanes-tui ask inside a lane, which sets both\n"


def test_cli_inbox_in_a_repository(repo: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("LANES_HOME", raising=False)
    store = InboxStore(StatePaths(repo).inbox)
    q = store.ask(LANE, kind="yesno", title="Deploy?\x1b[31m now")
    done = store.ask("other-a2", kind="text", title="Name?")
    store.answer(done.id, "flag")
    listed = run_cli("inbox", "--json", cwd=repo)
    assert listed.returncode == 0
    data = json.loads(listed.stdout)
    assert [(d["id"], d["state"], d.get("answer")) for d in data] == [(q.id, "open", None),
                                                                      (done.id, "answered", "flag")]
    table = run_cli("inbox", "--repo", str(repo), "--state", "open")
    assert table.returncode == 0 and q.id in table.stdout and done.id not in table.stdout
    assert "\x1b" not in table.stdout and "ask-cli" in table.stdout
    assert run_cli("answer", q.id, "nope", cwd=repo).returncode == 2
    assert run_cli("answer", q.id, "yes", cwd=repo).stdout.strip() == f"answered {q.id} yes"
    outside = run_cli("inbox", cwd=repo.parent)
    assert outside.returncode == 2 and "not inside a git repository" in outside.stderr


def test_cli_killed_by_sigterm_prints_the_id_and_leaves_it_open(lane_env: Path, asker: type[Asker]) -> None:
    store = InboxStore(lane_env / "inbox")
    helper = asker("Deploy?")
    q = wait_for_question(store)
    helper.proc.terminate()
    code, out, err = helper.result()
    assert (code, out.strip()) == (130, q.question.id) and f"ask --wait {q.question.id}" in err
    assert store.get(q.question.id).state == "open"
