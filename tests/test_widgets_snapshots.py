"""Snapshots of every pane and dialog at 120x36 with fixed data (`--snapshot-update` to accept)."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import pytest

from lanes_tui.engine import AcceptPlan, GateReport, GateStepView
from lanes_tui.engine.plans.model import TicketStatus
from lanes_tui.widgets import (
    AcceptModal,
    AllowRuleModal,
    AttentionBar,
    ConfirmModal,
    DiffPane,
    GatesPane,
    HelpScreen,
    InboxPane,
    LanesTable,
    MetersPane,
    OutputPane,
    PlanPane,
    RecoverModal,
    StallsPane,
    StartLaneModal,
    TextAnswerModal,
    WorktreesPane,
)
from lanes_tui.widgets.conflicts_modal import ConflictsModal
from tests.snapshot_apps.widget_apps import (
    BEST_OF,
    DIFF,
    LANES,
    MACHINE,
    NOW,
    QUESTIONS,
    REVIEWS,
    WORKTREES,
    ModalHost,
    WidgetHost,
    lane,
    question,
)

SIZE = (120, 36)

ACCEPT_LINES = [
    "lane tidy-tests-a2 (ready) → programme at 0123456789",
    "gates: passed; review: MISSING",
    "files (3): src/cache.py, tests/test_cache.py, README.md",
    "the target moved since the lane started: the lane is rebased and its gates run again",
    "then the worktree and branch lane/tidy-tests-a2 are removed",
]
#: A lane its review blocks: gates passed, a sim reviewer's four findings, no verification. The modal is
#: built from the plan as the dashboard builds it (`AcceptModal.for_plan`), so its lines are the engine's.
BLOCKING_REFUSAL = ("the review is BLOCKING (sim-reviewer: 4 findings); fix it (`lanes-tui recover divide-a1 "
                    "--relaunch` gives the agent the findings) or accept with --override-review REASON")
BLOCKED_PLAN = AcceptPlan(
    lane_id="divide-a1", state="rejected", target="programme", target_sha="0123456789abcdef" * 2 + "01234567",
    base_sha="b" * 40, worktree=Path("/wt/calc-1234abcd/divide-a1"), branch="lane/divide-a1",
    files=["divide.py", "test_divide.py"], gates_status="passed",
    gates=[{"command": "python -m unittest -q", "status": "passed", "exit_code": 0, "duration_s": 1.24},
           {"command": "ruff check .", "status": "passed", "exit_code": 0, "duration_s": 0.31}],
    review="BLOCKING", needs_rebase=False, target_checkout=None, refusals=[BLOCKING_REFUSAL],
    review_detail={"verdict": "BLOCKING", "reviewer": "sim-reviewer", "family": "sim-review",
                   "reason": "REVIEW: BLOCKING on line 7", "tail": "", "diff_digest": "d" * 16,
                   "started": NOW - 30, "ended": NOW - 20,
                   "findings": [{"path": "divide.py", "line": 1, "text": "added line is marked BUG/FIXME: "
                                 "def div(a, b): return a / b # FIXME: b == 0 raises"},
                                {"path": "divide.py", "line": 4, "text": "FIXME: no rounding mode"},
                                {"path": "test_divide.py", "line": 9, "text": "BUG: the zero case is untested"},
                                {"path": "divide.py", "line": None, "text": "no docstring says why"}]},
    review_refusals=[BLOCKING_REFUSAL],
)
ABANDON_REFUSED = [
    "abandon old-work-a1 (accepted): stop its processes, remove /wt/proj/old-work-a1 and branch "
    "lane/old-work-a1; packet and logs are kept",
    "REFUSED: the lane is already accepted",
]
FINDINGS = [
    "slow-docs-a1: stalled (no activity for 900.0s); result LANE-STALLED",
    "stopped leftover processes: 4242",
    "stalled after 900.0s idle; tree: 4242 python",
    "--recheck: run the gates again on the worktree as it is (ready if they pass)",
    "--relaunch: start the next attempt from the current target with these findings in its prompt",
]
KEYS = [("a", "accept the selected lane"), ("x", "abandon the selected lane"), ("r", "recover"),
        ("y / n", "answer the selected question"), ("enter", "answer with text or a choice"),
        ("s", "start a lane"), ("k", "kill"), ("g", "gates again"), ("d", "diff"), ("tab", "next pane"),
        ("q", "quit (lanes keep running)")]


#: The governor's caps as `governor_summary` gives them (the Meters pane shows them on its last line).
CAPS = [{"cap": "cpu", "value": "100%", "mechanism": "cgroup-v2 cpu.max"},
        {"cap": "memory", "value": "2.0 GiB", "mechanism": "cgroup-v2 memory.max"},
        {"cap": "pids", "value": "512", "mechanism": "cgroup-v2 pids.max"},
        {"cap": "nice", "value": "10", "mechanism": "setpriority + ionice"},
        {"cap": "spend", "value": "$5.00", "mechanism": "pause and ask the lead"}]
#: A lane a cap stopped, for the Stalls & caps pane.
HUNGRY = lane("hungry-a1", "exited", result="FAILED-RESOURCE", idle_s=None, fired={
    "cap": "memory", "value": "256 MiB", "peak": "255 MiB", "mechanism": "cgroup-v2 memory.max",
    "killed": "python3 (pid 123, 250 MiB)", "reason": "the kernel's OOM killer stopped python3 at the cap"})


#: An open plan's tickets for the Plan pane: one of each state, a takeover among them.
TICKETS = [
    TicketStatus("checkout", "schema", "Add the orders table", "accepted", lane="schema-a1", attempts=1,
                 owned_files=2),
    TicketStatus("checkout", "api", "Orders API", "ready", lane="api-a1", attempts=1, owned_files=4),
    TicketStatus("checkout", "payments", "Card payments", "takeover", lane="payments-a2", attempts=2,
                 owned_files=3, reason="attempts used up: relaunch with a note, amend the plan or abandon"),
    TicketStatus("checkout", "ui", "Checkout page", "running", lane="ui-a1", attempts=1, max_attempts=3,
                 owned_files=6),
    TicketStatus("checkout", "emails", "Order e-mails", "waiting", blocked_by=(), owned_files=1,
                 reason="api-a1 owns src/api/orders.py"),
    TicketStatus("checkout", "docs", "Document the checkout", "blocked", blocked_by=("payments", "ui"),
                 owned_files=1),
]


def _radar(lanes: list[Any]) -> list[Any]:
    """LANES with the conflict radar's findings on three of them (the radar column and the Conflicts dialog)."""
    found: dict[str, list[dict[str, Any]]] = {
        "fix-login-a1": [{"lane": "tidy-tests-a2", "files": ["src/auth.py"], "kind": "overlap"},
                         {"lane": "add-cache-a1", "files": ["src/cache.py", "README.md"], "kind": "overlap"}],
        "add-cache-a1": [{"lane": "fix-login-a1", "files": ["src/cache.py", "README.md"], "kind": "overlap"}],
        "tidy-tests-a2": [{"lane": None, "files": ["tests/test_cache.py"], "kind": "target"},
                          {"lane": "fix-login-a1", "files": ["src/auth.py"], "kind": "overlap"}],
    }
    return [dataclasses.replace(s, conflicts=tuple({**c, "target": "programme"} for c in found.get(s.id, [])))
            for s in lanes]


RADAR_LANES = _radar(LANES)
#: The Lanes pane: reviews on two lanes, and a best-of group whose lanes come apart in the given order
#: (the pane shows them together, best first, where the group's first lane is).
SHOWN_LANES = [dataclasses.replace(s, review=REVIEWS.get(s.id)) for s in RADAR_LANES]
SHOWN_LANES = [*SHOWN_LANES[:4], BEST_OF[2], *SHOWN_LANES[4:], BEST_OF[0], BEST_OF[1]]


#: Two agents' context meters, one near its limit (the Meters pane's context line).
CONTEXTS = {"fix-login-a1": {"used": 126_000, "window": 200_000, "fraction": 0.63, "near": False},
            "add-cache-a1": {"used": 185_000, "window": 200_000, "fraction": 0.925, "near": True}}


def _meters(pane: MetersPane) -> None:
    for i, cpu in enumerate([12, 25, 80, 64, 35, 50, 95, 40, 37.4]):
        pane.update_machine(dict(MACHINE, cpu_percent=cpu, spend_usd=0.5 * i, caps=CAPS,
                                 locks={"tidy-tests-a2": 3, "fix-login-a1": 1}, contexts=CONTEXTS))


def _output(pane: OutputPane) -> None:
    text = "".join(f"step {i}: \x1b[32mok\x1b[0m\n" for i in range(60)) + "running tests…\r\n"
    pane.show("fix-login-a1", text)


def _overview(table: LanesTable) -> None:
    """Many lanes: sorted by attention, and two lanes whose state changed since the lead saw them."""
    table.sync(SHOWN_LANES, NOW)
    table.cycle_sort()
    news = {"quiet-one-a1": ("stalled", "no activity for 900.0s"), "tidy-tests-a2": ("conflict", "rebase conflicts")}
    table.sync([dataclasses.replace(s, state=news[s.id][0], state_reason=news[s.id][1]) if s.id in news else s
                for s in SHOWN_LANES], NOW)


GATES = GateReport((
    GateStepView("ruff", "passed", 1.4, "ruff check .", 0, 1800.0),
    GateStepView("pytest", "failed", 62.0, "/repo/.venv/bin/python -m pytest -q -o faulthandler_timeout=1170", 1,
                 1200.0),
    GateStepView("npm", "not-run", 0.0, "npm test", None, 1800.0),
), "pytest", "".join(f"tests/test_calc.py::test_case_{i} PASSED\n" for i in range(12))
    + "tests/test_calc.py::test_divide FAILED\n\n    def test_divide():\n>       assert divide(1, 0) == 0\n"
    "E       ZeroDivisionError: division by zero\n\n1 failed, 12 passed in 61.80s\n",
    ("gate variable API_URL (step pytest) is not set in the lead's environment",))


PERMISSION = question("q_00000000000b", "fix-login-a1", "open", NOW, kind="permission", source="claude-stdio",
                      title="Allow Bash: pytest -q tests/test_auth.py",
                      correlation={"request_id": "req_1", "tool_name": "Bash",
                                   "subject": "pytest -q tests/test_auth.py"})


def _make(name: str) -> Any:
    panes: dict[str, Any] = {
        "lanes": lambda: WidgetHost(LanesTable(), lambda w: w.sync(SHOWN_LANES, NOW)),
        "lanes_overview": lambda: WidgetHost(LanesTable(), _overview),
        "inbox": lambda: WidgetHost(InboxPane(), lambda w: w.sync(QUESTIONS, NOW)),
        "stalls": lambda: WidgetHost(StallsPane(), lambda w: w.sync([*LANES, HUNGRY], 300)),
        "worktrees": lambda: WidgetHost(WorktreesPane(), lambda w: w.sync(WORKTREES)),
        "meters": lambda: WidgetHost(MetersPane(), _meters),
        "output": lambda: WidgetHost(OutputPane(), _output),
        "diff": lambda: WidgetHost(DiffPane(), lambda w: w.show("fix-login-a1", DIFF)),
        "attention": lambda: WidgetHost(AttentionBar(), lambda w: w.set_counts(2, 1, 3)),
        "plan": lambda: WidgetHost(PlanPane(), lambda w: w.sync(TICKETS)),
        "gates": lambda: WidgetHost(GatesPane(), lambda w: w.show("divide-a1", GATES)),
        "confirm_accept": lambda: ModalHost(lambda: ConfirmModal("Accept tidy-tests-a2?", ACCEPT_LINES)),
        "accept_blocked": lambda: ModalHost(lambda: AcceptModal.for_plan("Accept divide-a1?", BLOCKED_PLAN)),
        "confirm_refused": lambda: ModalHost(lambda: ConfirmModal("Abandon old-work-a1?", ABANDON_REFUSED)),
        "recover": lambda: ModalHost(lambda: RecoverModal(FINDINGS)),
        "answer_choice": lambda: ModalHost(lambda: TextAnswerModal(QUESTIONS[2])),
        "answer_text": lambda: ModalHost(lambda: TextAnswerModal(question(
            "q_00000000000a", "add-cache-a1", "open", NOW, kind="text", title="Which cache backend?",
            body="redis is installed on the CI machines; memcached is not."))),
        "start_lane": lambda: ModalHost(lambda: StartLaneModal(["backend", "docs", "hard", "tests", "ui"],
                                                               ["claude", "codex", "sim"])),
        "help": lambda: ModalHost(lambda: HelpScreen(KEYS)),
        "conflicts": lambda: ModalHost(lambda: ConflictsModal(RADAR_LANES)),
        "allow_rule": lambda: ModalHost(lambda: AllowRuleModal(PERMISSION)),
    }
    return panes[name]()


@pytest.mark.parametrize("name", [
    "lanes", "inbox", "stalls", "worktrees", "meters", "output", "diff", "attention", "plan",
    "confirm_accept", "accept_blocked", "confirm_refused", "recover", "answer_choice", "answer_text", "start_lane",
    "help", "conflicts", "lanes_overview", "allow_rule", "gates",
])
def test_widget_snapshot(name: str, snap_compare: Any) -> None:
    assert snap_compare(_make(name), terminal_size=SIZE)
