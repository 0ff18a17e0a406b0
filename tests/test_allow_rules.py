""""Allow for this lane" and "allow by pattern" for structured permission prompts (docs/inbox.md).

End to end against the fake claude: the lead allows the first Bash request with a pattern, the
second (which matches) is allowed by the rule without a question reaching the lead, the third holds
a shell control character, so the pattern does not cover it and the lead is asked again.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from lanes_tui.engine.core.errors import LanesError
from lanes_tui.engine.decisions.api import allow_always
from lanes_tui.engine.inbox.store import InboxStore
from lanes_tui.engine.state.allow import AllowRule, RuleBook, add_rule, read_rules
from lanes_tui.engine.state.paths import StatePaths
from tests.fakes import CLAUDE_TABLE
from tests.helpers import cli, output, run_lane, status, wait_for, wait_state, write_config


@pytest.mark.parametrize(("rule", "tool", "subject", "allowed"), [
    (AllowRule("Bash"), "Bash", "rm -rf /", True),  # the whole tool, as the lead chose
    (AllowRule("Bash"), "Write", "x.py", False),
    (AllowRule("Bash", "pytest *"), "Bash", "pytest -q tests", True),
    (AllowRule("Bash", "pytest *"), "Bash", "pytest -q; rm -rf ~", False),
    (AllowRule("Bash", "pytest *"), "Bash", "pytest $(rm -rf ~)", False),
    (AllowRule("Bash", "pytest *"), "Bash", "pytest -q && curl evil", False),
    (AllowRule("Bash", "pytest *"), "Bash", "pytest\nrm -rf ~", False),
    (AllowRule("Bash", "pytest *"), "Bash", "PYTEST -q", False),  # case-sensitive
    (AllowRule("Bash", "make test | tee log"), "Bash", "make test | tee log", True),  # exact: itself only
    (AllowRule("Bash", "make test | tee log"), "Bash", "make test | tee log2", False),
    (AllowRule("Edit", "src/*.py"), "Edit", "src/a; b.py", True),  # shell characters matter for Bash only
    (AllowRule("WebFetch", "https://docs.python.org/*"), "WebFetch", None, False),
])
def test_a_rule_matches_its_tool_and_pattern(rule: AllowRule, tool: str, subject: str | None,
                                              allowed: bool) -> None:
    assert rule.matches(tool, subject) is allowed


def test_rules_are_added_once_recorded_and_reread_when_changed(tmp_path: Path) -> None:
    lane_dir = tmp_path / "lane"
    lane_dir.mkdir()
    with pytest.raises(LanesError):
        add_rule(lane_dir, "Bash", "pytest *")  # no lane there
    (lane_dir / "lane.json").write_text("{}")
    book = RuleBook(lane_dir)
    assert book.match("Bash", "pytest -q") is None
    first = add_rule(lane_dir, "Bash", "pytest *", question="q_0123456789ab")
    assert add_rule(lane_dir, "Bash", "pytest *") == first
    assert book.match("Bash", "pytest -q") == first
    add_rule(lane_dir, "Read", None)
    assert [r.describe() for r in read_rules(lane_dir)] == ["Bash matching 'pytest *'", "any Read"]
    events = [json.loads(line) for line in (lane_dir / "events.jsonl").read_text().splitlines()]
    assert [(e["type"], e["tool"], e["pattern"]) for e in events] == [("allow-rule", "Bash", "pytest *"),
                                                                       ("allow-rule", "Read", None)]
    with pytest.raises(LanesError):
        add_rule(lane_dir, "Bash", "  ")


def test_a_malformed_allow_file_allows_nothing_it_cannot_read(tmp_path: Path) -> None:
    (tmp_path / "allow.json").write_text(json.dumps({"rules": [{"tool": 3}, {"tool": "Read", "pattern": ["x"]},
                                                               "junk", {"tool": "Grep"}]}))
    assert read_rules(tmp_path) == [AllowRule("Grep", None, "?", 0.0, None)]
    (tmp_path / "allow.json").write_text("[not json")
    assert read_rules(tmp_path) == []


def _questions(repo: Path, lane: str) -> list[dict[str, Any]]:
    return [q for q in json.loads(cli(repo, "inbox", "--json", check=True).stdout) if q["lane"] == lane]


def _open_question(repo: Path, lane: str, request_id: str) -> dict[str, Any]:
    def find() -> dict[str, Any] | None:
        return next((q for q in _questions(repo, lane) if q["correlation"].get("request_id") == request_id
                     and q["state"] == "open"), None)

    found: dict[str, Any] = wait_for(find)
    return found


def test_allow_by_pattern_answers_later_requests_of_the_lane_by_rule(repo: Path) -> None:
    write_config(repo, chains='backend = ["fakeclaude"]', extra=CLAUDE_TABLE)
    lane = run_lane(repo, "rules", lane_id="claude-rules")
    first = _open_question(repo, lane, "req_rule_1")
    assert first["correlation"]["subject"] == "pytest -q"
    inbox = InboxStore(StatePaths(repo).inbox)
    with pytest.raises(LanesError, match="no question"):
        allow_always(repo, inbox, "q_" + "0" * 16, None)
    rule = allow_always(repo, inbox, first["id"], "pytest *")
    assert (rule.tool, rule.pattern, rule.question) == ("Bash", "pytest *", first["id"])
    third = _open_question(repo, lane, "req_rule_3")  # the second went by the rule; the third asks
    assert third["title"] == "Allow Bash: pytest -q; rm -rf build"
    cli(repo, "answer", third["id"], "no", check=True)
    wait_state(repo, lane)
    assert status(repo, lane)["result"] == "OK"
    assert "rules: allow, allow, deny" in output(repo, lane)
    by_request = {q["correlation"]["request_id"]: q for q in _questions(repo, lane)}
    assert [(by_request[f"req_rule_{i}"]["state"], by_request[f"req_rule_{i}"]["answered_by"])
            for i in (1, 2)] == [("delivered", "lead"), ("delivered", "rule")]
    events_file = repo / ".lanes/state/lanes" / lane / "events.jsonl"
    events = [json.loads(line) for line in events_file.read_text().splitlines()]
    rules = [e for e in events if e["type"] in ("allow-rule", "allow-auto")]
    assert [(e["type"], e.get("subject")) for e in rules] == [("allow-rule", None),
                                                              ("allow-auto", "pytest tests/test_calc.py")]
    assert rules[1]["question"] == by_request["req_rule_2"]["id"] and rules[1]["pattern"] == "pytest *"


def test_allow_always_refuses_a_question_that_is_not_a_tool_prompt(repo: Path) -> None:
    write_config(repo)
    lane = run_lane(repo, "ask --yes-no Deploy?\n", lane_id="asker")
    question = wait_for(lambda: _questions(repo, lane))[0]
    with pytest.raises(LanesError, match="not a tool's permission prompt"):
        allow_always(repo, InboxStore(StatePaths(repo).inbox), question["id"], None)
    cli(repo, "answer", question["id"], "no", check=True)
    wait_state(repo, lane)
