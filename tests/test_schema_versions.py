"""Every state file carries a schema version (issue 28, item 7).

Real sim lanes write their files; then each file is turned into the old format (no `schema`, read as
version 1) or into a newer one (`schema` 2, refused in one line naming the file, its owner and both
versions, with `upgrade lanes-tui`). A newer file of one lane never hides another lane, `status
--json` keeps its contract, and nothing rewrites or removes a file it cannot read.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from lanes_tui.engine.core.errors import LanesError
from lanes_tui.engine.core.schema import VERSIONS, NewerSchema, check_schema, stamped
from lanes_tui.engine.plans.model import Plan, Ticket
from lanes_tui.engine.plans.state import PlanStore
from tests.conftest import git
from tests.helpers import cli, run_lane, status, wait_state, write_config

LANE_FILES = ("lane.json", "origin.json", "packet.json", "receipt.json", "meters.json")


def _lane_dir(repo: Path, lane: str) -> Path:
    return repo / ".lanes" / "state" / "lanes" / lane


def _edit(path: Path, schema: int | None) -> None:
    data: dict[str, Any] = json.loads(path.read_text())
    data.pop("schema", None)
    if schema is not None:
        data["schema"] = schema
    path.write_text(json.dumps(data))


def _one_line(proc: Any, expected: str) -> None:
    lines = proc.stderr.strip().splitlines()
    assert proc.returncode == 2 and len(lines) == 1 and expected in lines[0], proc.stderr
    assert "Traceback" not in proc.stderr


def test_state_files_carry_their_version_old_ones_read_newer_ones_refused(repo: Path) -> None:
    git(repo, "checkout", "-q", "-b", "programme")  # main is protected: accept goes to a programme branch
    write_config(repo)
    script = "usage 100 20 0.01\nask --yes-no --timeout 0 --default no Ship it?\nwrite a.txt hello"
    old, new, third = (run_lane(repo, script, lane_id=name) for name in ("old", "new", "third"))
    for lane in (old, new, third):
        assert wait_state(repo, lane) == f"{lane} ready OK"
        for name in LANE_FILES:
            assert json.loads((_lane_dir(repo, lane) / name).read_text())["schema"] == VERSIONS[name], name
    inbox = sorted((repo / ".lanes" / "state" / "inbox").rglob("q_*.json"))  # questions and their marks
    assert inbox and all(json.loads(q.read_text())["schema"] == 1 for q in inbox)
    questions = [q for q in inbox if q.name.count(".") == 1]
    keys = {lane: set(status(repo, lane)) for lane in (old, new)}

    # The old format: no `schema` anywhere in a lane's files, and (older still than the schema) no seals.
    for name in LANE_FILES:
        _edit(_lane_dir(repo, old) / name, None)
    shutil.rmtree(repo / ".lanes" / "state" / "seals" / old)
    assert status(repo, old)["state"] == "ready"
    assert cli(repo, "accept", old, "--dry-run").returncode == 0
    assert cli(repo, "diff", old, "--stat").returncode == 0

    # A newer lane.json: that lane is one problem line; the others are untouched.
    _edit(_lane_dir(repo, new) / "lane.json", 2)
    rows = {row["id"]: row for row in status(repo)}
    assert rows[old]["state"] == "ready" and rows[third]["state"] == "ready"
    assert set(rows[old]) == keys[old]  # the `status --json` contract: the same keys as before
    assert "was written by a newer lanes-tui (schema 2 > 1)" in rows[new]["problem"]
    text = cli(repo, "status", check=True).stdout
    assert f"lane.json of {new} was written by a newer lanes-tui (schema 2 > 1) — upgrade lanes-tui" in text
    message = f"lane.json of {new} was written by a newer lanes-tui (schema 2 > 1) — upgrade lanes-tui"
    for argv in (["accept", new], ["check", new], ["diff", new], ["abandon", new, "--force"]):
        _one_line(cli(repo, *argv), message)
    assert json.loads((_lane_dir(repo, new) / "lane.json").read_text())["schema"] == 2  # never rewritten
    assert not list(_lane_dir(repo, new).glob("lane.json.corrupt-*"))  # nor taken for a corrupt one

    # Newer packet, origin and meters of the third lane: each refused where it is read.
    _edit(_lane_dir(repo, third) / "packet.json", 3)
    _one_line(cli(repo, "accept", third), f"packet.json of {third} was written by a newer lanes-tui (schema 3 > 1)")
    _edit(_lane_dir(repo, third) / "packet.json", 1)
    _edit(_lane_dir(repo, third) / "origin.json", 2)
    _one_line(cli(repo, "diff", third), f"origin.json of {third} was written by a newer lanes-tui (schema 2 > 1)")
    _edit(_lane_dir(repo, third) / "origin.json", None)
    _edit(_lane_dir(repo, third) / "meters.json", 2)
    row = status(repo, third)
    assert "meters.json of " + third + " was written by a newer lanes-tui" in row["problem"]
    assert set(row) == keys[new] and status(repo, old)["state"] == "ready"

    # A newer answer or question: `answer` refuses it in one line, `inbox` lists the rest.
    newest = questions[-1]
    _edit(newest, 2)
    _one_line(cli(repo, "answer", newest.stem, "yes"), "was written by a newer lanes-tui (schema 2 > 1)")
    listed = json.loads(cli(repo, "inbox", "--json", check=True).stdout)
    assert {q["id"] for q in listed} == {q.stem for q in questions[:-1]}


def test_plan_state_files_carry_their_version(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    store = PlanStore(repo, "p")
    store.freeze(Plan("p", (Ticket(id="a", title="a", prompt="say a", scope=("a.txt",)),)), source="x", who="lead")
    for path in (store.paths.plan, store.paths.tickets):
        assert json.loads(path.read_text())["schema"] == 1
        _edit(path, None)  # the old format reads as it is
    assert store.read_plan().plan.name == "p" and "a" in store.read_record().tickets
    _edit(store.paths.tickets, 2)
    with pytest.raises(NewerSchema, match=r"tickets.json of plan p was written by a newer lanes-tui \(schema 2 > 1\)"):
        store.read_record()
    _edit(store.paths.plan, 5)
    with pytest.raises(NewerSchema, match=r"plan.json of plan p .*\(schema 5 > 1\) — upgrade lanes-tui"):
        store.read_plan()


@pytest.mark.parametrize("value", ["2", 0, -1, True, 1.5, None, [2]])
def test_a_damaged_version_is_one_error_never_newer(value: Any) -> None:
    with pytest.raises(LanesError, match="not a version number") as caught:
        check_schema({"schema": value}, "lane.json", "x-a1")
    assert not isinstance(caught.value, NewerSchema)


def test_stamping_and_the_versions() -> None:
    assert stamped({"a": 1, "schema": 7}, "packet.json") == {"schema": 1, "a": 1}
    assert check_schema({"a": 1}, "lane.json", "x") == 1 and check_schema([1], "lane.json", "x") == 1
    assert check_schema({"schema": 1}, "meters.json", "x-a1") == 1
    assert set(VERSIONS) >= {*LANE_FILES, "question", "answer", "mark", "plan.json", "tickets.json"}
