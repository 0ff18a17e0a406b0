"""A fake engine for UI tests: the same surface as `Engine`, canned data, and a log of every call.

The app never touches lane files itself, so a fake with the same methods is enough to drive every
key. Answers go to a real InboxStore, so a test can check the answer file the key wrote.
"""

from __future__ import annotations

import asyncio
import dataclasses
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

from lanes_tui.engine.config.settings import parse_config
from lanes_tui.engine.core.errors import LanesError
from lanes_tui.engine.decisions.abandon import AbandonPlan
from lanes_tui.engine.decisions.accept import AcceptOutcome
from lanes_tui.engine.decisions.accept_plan import AcceptPlan
from lanes_tui.engine.decisions.comment import Broadcast, CommentOutcome, comment_on_lane, kept_comments, send_to_lanes
from lanes_tui.engine.decisions.finish import FinishReport
from lanes_tui.engine.decisions.queue import QueueEntry, QueuePlan, QueueReport, QueueStep
from lanes_tui.engine.decisions.recover import Findings
from lanes_tui.engine.decisions.results import Packet
from lanes_tui.engine.inbox.store import InboxStore
from lanes_tui.engine.inbox.view import QuestionView
from lanes_tui.engine.lanes.control_client import send_to_lane
from lanes_tui.engine.lanes.launcher import LaunchRequest
from lanes_tui.engine.state.allow import AllowRule
from lanes_tui.engine.state.comments import HunkComment
from lanes_tui.engine.state.events import EngineEvent, LaneChanged, QuestionsChanged
from lanes_tui.engine.state.model import LaneRecord
from lanes_tui.engine.state.status import LaneStatus

NOW = time.time()


def lane(lane_id: str, state: str, **extra: Any) -> LaneStatus:
    status: dict[str, Any] = {
        "id": lane_id, "task": lane_id.rsplit("-a", 1)[0], "state": state, "state_reason": f"{state} for a test",
        "result": "OK" if state in ("ready", "rejected") else None, "provider": "sim",
        "providers_tried": [{"provider": "sim", "model": "sim"}], "attempt": 1, "created": NOW - 60,
        "updated": NOW - 5, "idle_s": 1.0, "cpu_percent": 3.0, "rss_bytes": 20_000_000, "tokens": None,
        "cost_usd": None, "cost_estimated": False, "worktree": f"/tmp/wt/{lane_id}", "branch": f"lane/{lane_id}",
        "stall": None,
    }
    status.update(extra)
    return LaneStatus.from_json(status)


class FakeEngine:
    def __init__(self, root: Path, lanes: list[LaneStatus] | None = None) -> None:
        self.repo = root
        self.config = parse_config("[chains]\nbackend = [\"sim\"]\n", path=None, repo=root)
        self.inbox = InboxStore(root / "inbox")
        self.calls: list[tuple[str, Any]] = []
        self._lanes = {s.id: s for s in (lanes or [])}
        self._queues: list[asyncio.Queue[EngineEvent | None]] = []
        self.refusals: dict[str, list[str]] = {}
        self.files = ["calc.py", "test_calc.py"]
        self.output_lanes: set[str] | None = None
        self.follows: list[tuple[str | None, int | None]] = []  # follow_output's calls
        self.resume_ok = True  # whether follow_output can stream from a tail read ahead

    # lifecycle and stream
    async def start(self) -> None:
        self.calls.append(("start", None))

    async def aclose(self) -> None:
        self.calls.append(("aclose", None))
        for queue in self._queues:
            queue.put_nowait(None)

    async def events(self) -> AsyncIterator[EngineEvent]:
        queue: asyncio.Queue[EngineEvent | None] = asyncio.Queue()
        self._queues.append(queue)
        while (event := await queue.get()) is not None:
            yield event

    def emit(self, event: EngineEvent) -> None:
        for queue in self._queues:
            queue.put_nowait(event)

    def set_lane(self, status: LaneStatus) -> None:
        known = self._lanes.get(status.id)
        self._lanes[status.id] = status
        self.emit(LaneChanged(status.id, status, known.state if known else None))

    def change_lane(self, lane_id: str, **changes: Any) -> None:
        self.set_lane(dataclasses.replace(self._lanes[lane_id], **changes))

    def publish_questions(self) -> None:
        self.emit(QuestionsChanged(tuple(self.questions())))

    # views
    def lanes(self) -> list[LaneStatus]:
        return list(self._lanes.values())

    def questions(self) -> list[QuestionView]:
        return self.inbox.list()

    def follow_output(self, lane_id: str | None, from_offset: int | None = None) -> bool:
        """The engine's: this fake's output never grows, so a tail read ahead is always current."""
        self.output_lanes = {lane_id} if lane_id else set()
        self.follows.append((lane_id, from_offset))
        return from_offset is not None and self.resume_ok

    async def output_tail_at(self, lane_id: str, max_bytes: int = 65536) -> tuple[str, int]:
        self.calls.append(("output", lane_id))
        text = f"output of {lane_id}\n"
        return text, len(text)

    async def diff(self, lane_id: str) -> str:
        self.calls.append(("diff", lane_id))
        return f"--- a/calc.py\n+++ b/calc.py\n@@ -1 +1 @@\n-old {lane_id}\n+new {lane_id}\n"

    async def gate_report(self, lane_id: str) -> Any:
        self.calls.append(("gates", lane_id))
        from lanes_tui.engine import GateReport, GateStepView
        steps = (GateStepView("pytest", "failed", 62.0, "python -m pytest -q", 1, 1200.0),)
        return GateReport(steps, "pytest", f"FAILED tests/test_calc.py::test_add - {lane_id}\n", ())

    async def worktree_rows(self) -> list[dict[str, Any]]:
        return [{"lane": s.id, "path": s.worktree, "branch": s.branch, "changed": 2, "insertions": 14,
                 "deletions": 3, "ahead": 0, "behind": 0} for s in self._lanes.values()]

    async def machine(self) -> dict[str, Any]:
        return {"cpu_percent": 12.0, "mem_percent": 40.0, "load1": 0.5, "disk_free_bytes": 10**11,
                "slots_used": 0, "slots_total": 1, "slot_holders": [], "running": 1, "max_parallel": 6,
                "spend_usd": 0.0, "tokens": 0}

    # commands
    async def plan_accept(self, lane_id: str, override: str | None = None) -> AcceptPlan:
        self.calls.append(("plan_accept", lane_id))
        status = self._lanes[lane_id]
        refusals = list(self.refusals.get(lane_id, []))
        if status.state != "ready" and not refusals:
            refusals.append(f"the lane is {status.state}, not ready (a gate failed); fix it, or accept with "
                            "--override REASON")
        return AcceptPlan(lane_id=lane_id, state=status.state, target="programme", target_sha="a" * 40,
                          base_sha="b" * 40, worktree=Path(status.worktree), branch=status.branch,
                          files=list(self.files), gates_status="passed", gates=[], review="MISSING",
                          needs_rebase=False, target_checkout=None, refusals=refusals)

    async def accept(self, lane_id: str, *, message: str | None = None, override: str | None = None) -> AcceptOutcome:
        self.calls.append(("accept", lane_id))
        self.change_lane(lane_id, state="accepted")
        return AcceptOutcome(lane_id, "accepted", f"accepted {lane_id} into programme at cafe000000")

    async def plan_abandon(self, lane_id: str, *, force: bool = False) -> AbandonPlan:
        self.calls.append(("plan_abandon", lane_id))
        status = self._lanes[lane_id]
        return AbandonPlan(lane_id, status.state, Path(status.worktree), status.branch, 0,
                           list(self.files), [])

    async def abandon(self, lane_id: str, *, force: bool = False) -> list[str]:
        self.calls.append(("abandon", lane_id))
        self.change_lane(lane_id, state="abandoned")
        return [f"worktree {lane_id}"]

    async def wake(self, lane_id: str) -> bool:
        self.calls.append(("wake", lane_id))
        return False

    async def inspect(self, lane_id: str, *, stop_leftovers: bool = True) -> Findings:
        self.calls.append(("inspect", lane_id))
        status = self._lanes[lane_id]
        return Findings(lane_id, status.state, status.state_reason, status.result)

    async def recheck(self, lane_id: str) -> Packet:
        self.calls.append(("recheck", lane_id))
        return Packet.from_json({"gates_status": "passed"}, lane=lane_id)

    async def relaunch(self, lane_id: str, *, note: str | None = None) -> LaneRecord:
        self.calls.append(("relaunch", lane_id) if note is None else ("relaunch", (lane_id, note)))
        return LaneRecord(id=lane_id.replace("-a1", "-a2"), slug="x", attempt=2, task_type="backend", prompt="p",
                          chain=["sim"], repo=str(self.repo), worktree="/tmp/wt", branch="lane/x-a2",
                          base_sha="b" * 40, target_branch="programme")

    async def send(self, lane_id: str, text: str) -> dict[str, Any]:
        """As the Engine's: the lane's supervisor, through its control socket (a real one in tests)."""
        self.calls.append(("send", (lane_id, text)))
        return await asyncio.to_thread(send_to_lane, self.repo, lane_id, text)

    async def broadcast(self, lane_ids: list[str], text: str) -> Broadcast:
        """As the Engine's: each lane through `send` (real supervisors in tests, or refused)."""
        self.calls.append(("broadcast", (tuple(lane_ids), text)))
        return await send_to_lanes(lane_ids, text, self.send)

    async def comment(self, lane_id: str, comment: HunkComment) -> CommentOutcome:
        """As the Engine's: the real lane's agent, or its state folder (`decisions.comment`)."""
        self.calls.append(("comment", (lane_id, comment.file, comment.header, comment.text)))
        return await comment_on_lane(self.repo, lane_id, comment, self.send)

    async def kept_comments(self, lane_id: str) -> list[HunkComment]:
        return kept_comments(self.repo, lane_id)

    async def check(self, lane_id: str) -> Packet:
        self.calls.append(("check", lane_id))
        return Packet.from_json({"gates_status": "passed"}, lane=lane_id)

    async def finish(self) -> FinishReport:
        return FinishReport([], [])

    async def answer(self, qid: str, value: str) -> str:
        self.calls.append(("answer", (qid, value)))
        normalised = self.inbox.answer(qid, value, by="lead")
        self.publish_questions()
        return normalised

    async def allow_always(self, qid: str, pattern: str | None = None) -> AllowRule:
        self.calls.append(("allow_always", (qid, pattern)))
        self.inbox.answer(qid, "yes", by="lead")
        self.publish_questions()
        question = self.inbox.get(qid).question
        return AllowRule(str(question.correlation.get("tool_name")), pattern, question=qid)

    async def run_lane(self, request: LaunchRequest) -> LaneRecord:
        self.calls.append(("run_lane", request))
        return LaneRecord(id=f"{request.slug or 'task'}-a1", slug=request.slug or "task", attempt=1,
                          task_type=request.task_type, prompt=request.prompt, chain=["sim"], repo=str(self.repo),
                          worktree="/tmp/wt", branch="lane/task-a1", base_sha="b" * 40, target_branch="programme")

    async def kill(self, lane_id: str) -> list[int]:
        self.calls.append(("kill", lane_id))
        if self._lanes[lane_id].state in ("accepted", "abandoned"):
            raise LanesError(f"lane {lane_id} is {self._lanes[lane_id].state}; nothing runs there")
        self.change_lane(lane_id, state="exited", result="LANE-FAILED")
        return []

    async def plan_queue(self) -> QueuePlan:
        self.calls.append(("plan_queue", None))
        ready = sorted((s for s in self._lanes.values() if s.state == "ready"), key=lambda s: (s.created, s.id))
        return QueuePlan(tuple(QueueEntry(s.id, "created earlier; merges cleanly") for s in ready))

    async def accept_queue(self, plan: QueuePlan | None = None) -> QueueReport:
        self.calls.append(("accept_queue", plan.order if plan else None))
        steps = []
        for lane_id in plan.order if plan else []:
            self.change_lane(lane_id, state="accepted")
            steps.append(QueueStep(lane_id, "accepted", f"accepted {lane_id} into programme at cafe000000"))
        return QueueReport(tuple(steps))
