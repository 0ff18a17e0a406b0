"""The review run (issue 12, items 3–5 and 7): real sim lanes, real git, fake reviewer CLIs.

Each reviewer is a real process (`tests/fakes/fake_reviewer.py`) configured as a provider of another
family than the sim lanes that wrote the work: one prints CLEAN, one BLOCKING with findings, one
garbage, one nothing past its timeout, one that writes into its folder. The supervisor runs the review
after the gates; `lanes-tui review ID` runs it again by hand; accept honours the verdict.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

import pytest

from lanes_tui.engine.config.settings import load_config
from lanes_tui.engine.decisions.lane_diff import lane_diff
from lanes_tui.engine.decisions.review.prompt import REVIEW_MARKER, read_only_argv, review_prompt, reviewer_text
from lanes_tui.engine.decisions.review.run import REVIEW_OUTPUT
from lanes_tui.engine.lanes.launcher import LaunchRequest, launch_lane
from tests.conftest import git
from tests.helpers import cli, status, wait_state, write_config

FAKE = Path(__file__).parent / "fakes" / "fake_reviewer.py"
WORK = 'write calc.py "def add(a, b): return a + b  # reviewed"'


def reviewer(name: str, mode: str, *, family: str = "openai", json_out: bool = False) -> str:
    argv = json.dumps([sys.executable, str(FAKE), mode, *(["--json"] if json_out else [])])
    channel = '\nchannel = "codex-json"' if json_out else ""
    return f'[providers.{name}]\nargv = {argv}\nprompt = "stdin"\nfamily = "{family}"{channel}\n'


def configure(repo: Path, mode: str, *, timeout_s: float = 60, family: str = "openai", json_out: bool = False,
              review_mode: str = "cross-all", gates: str = "commands = []") -> None:
    extra = reviewer("rev", mode, family=family, json_out=json_out)
    extra += f'\n[review]\nmode = "{review_mode}"\nchain = ["rev"]\ntimeout_s = {timeout_s}\n'
    write_config(repo, extra=extra, gates=gates)


@pytest.fixture()
def programme(repo: Path) -> Path:
    git(repo, "checkout", "-q", "-b", "programme")  # main is protected by default
    return repo


def lane(repo: Path, slug: str, script: str = WORK) -> str:
    record = launch_lane(repo, load_config(repo), LaunchRequest(prompt=script, slug=slug))
    wait_state(repo, record.id)
    return record.id


def packet(repo: Path, lane_id: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((repo / ".lanes/state/lanes" / lane_id / "packet.json").read_text())
    return data


def events(repo: Path, lane_id: str) -> list[dict[str, Any]]:
    text = (repo / ".lanes/state/lanes" / lane_id / "events.jsonl").read_text()
    return [json.loads(line) for line in text.splitlines() if line.strip()]


# --- the verdicts land in the packet ---------------------------------------------------------------------

def test_a_clean_review_leaves_the_lane_ready_with_the_verdict_in_the_packet(programme: Path) -> None:
    repo = programme
    configure(repo, "clean", json_out=True)
    lane_id = lane(repo, "clean")
    row = status(repo, lane_id)
    assert row["state"] == "ready" and row["review"] == "CLEAN", row
    data = packet(repo, lane_id)
    detail = data["review_detail"]
    assert data["review"] == "CLEAN" and detail["reviewer"] == "rev" and detail["family"] == "openai"
    assert detail["diff_digest"] == lane_diff(repo, load_config(repo), lane_id).digest
    states = [e["state"] for e in events(repo, lane_id) if e.get("type") == "state"]
    # Gates passed, reviewed, ready: never `ready` before the verdict (a lead would press accept and be
    # refused a moment later, as the reviewer took over).
    assert states[-4:] == ["checking", "reviewing", "reviewing", "ready"], states
    assert "ready" not in states[:-1], states
    reasons = [e.get("reason", "") for e in events(repo, lane_id) if e.get("type") == "state"]
    assert reasons[-3] == "no gates configured; the review runs next", reasons
    # the reviewer's tokens count to the lane (codex --json usage through the codex channel)
    assert row["tokens"] and row["tokens"]["total"] >= 1280, row
    # the review worktree is gone: only the lead's checkout and the lane's are listed
    listed = git(repo, "worktree", "list", "--porcelain")
    assert ".review" not in listed and listed.count("worktree ") == 2, listed
    assert cli(repo, "accept", lane_id).returncode == 0


def test_a_blocking_review_rejects_and_accept_needs_an_override_with_a_reason(programme: Path) -> None:
    repo = programme
    configure(repo, "blocking")
    lane_id = lane(repo, "blocked")
    row = status(repo, lane_id)
    assert row["state"] == "rejected" and row["review"] == "BLOCKING", row
    assert "review BLOCKING by rev: 2 finding(s)" in row["state_reason"]
    findings = packet(repo, lane_id)["review_detail"]["findings"]
    assert findings == [{"path": "calc.py", "line": 2, "text": "divides by zero when b is 0"},
                        {"path": "calc.py", "line": None, "text": "no test covers the new branch"}]
    target = git(repo, "rev-parse", "programme")
    refused = cli(repo, "accept", lane_id)
    assert refused.returncode == 2 and "the review is BLOCKING (rev: 2 findings)" in refused.stderr
    assert "not ready" not in refused.stderr  # rejected by the review alone: only the review refuses
    assert "--override-review REASON" in refused.stderr and git(repo, "rev-parse", "programme") == target
    dry = cli(repo, "accept", lane_id, "--dry-run")
    assert "review: BLOCKING by rev (openai), 2 findings" in dry.stdout
    assert "  - calc.py:2: divides by zero when b is 0" in dry.stdout
    empty = cli(repo, "accept", lane_id, "--override-review", " ")
    assert empty.returncode == 2 and "--override-review needs a reason" in empty.stderr
    done = cli(repo, "accept", lane_id, "--override-review", "the division is guarded by the caller")
    assert done.returncode == 0, done.stderr
    assert git(repo, "rev-parse", "programme") != target
    data = packet(repo, lane_id)
    assert data["override_review"]["reason"] == "the division is guarded by the caller"
    assert "the review is BLOCKING" in data["override_review"]["refusals"][0]
    accepted = [e for e in events(repo, lane_id) if e.get("override_review")]
    assert accepted and accepted[-1]["override_review"] == "the division is guarded by the caller"


def test_garbage_from_the_reviewer_is_missing_with_its_tail_never_clean(programme: Path) -> None:
    repo = programme
    configure(repo, "garbage")
    lane_id = lane(repo, "garbage")
    row = status(repo, lane_id)
    assert row["state"] == "ready" and row["review"] == "MISSING", row
    detail = packet(repo, lane_id)["review_detail"]
    assert detail["reason"] == "no REVIEW: line" and "not sure about everything" in detail["tail"]
    assert "review MISSING: no REVIEW: line" in row["state_reason"]
    assert cli(repo, "accept", lane_id).returncode == 0  # MISSING is shown as such, and does not block


def test_a_silent_reviewer_is_stopped_at_its_timeout_and_the_review_is_missing(programme: Path) -> None:
    repo = programme
    configure(repo, "silent", timeout_s=1.5)
    lane_id = lane(repo, "silent")
    row = status(repo, lane_id)
    assert row["state"] == "ready" and row["review"] == "MISSING", row
    detail = packet(repo, lane_id)["review_detail"]
    assert detail["reason"].startswith("the reviewer did not finish"), detail
    exits = [e for e in events(repo, lane_id) if e.get("type") == "review-exit"]
    assert exits and exits[-1]["result"] != "OK"


def test_no_reviewer_of_another_family_is_missing_with_the_reason(programme: Path) -> None:
    repo = programme
    configure(repo, "clean", family="sim")  # the reviewer shares the writer's family
    lane_id = lane(repo, "samefamily")
    detail = packet(repo, lane_id)["review_detail"]
    assert detail["verdict"] == "MISSING" and "no reviewer of another family" in detail["reason"]
    assert status(repo, lane_id)["review"] == "MISSING"
    assert not (repo / ".lanes/state/lanes" / lane_id / REVIEW_OUTPUT).exists()  # nothing ran


def test_review_off_runs_nothing_and_writes_no_detail(programme: Path) -> None:
    repo = programme
    configure(repo, "blocking", review_mode="off")
    lane_id = lane(repo, "off")
    assert status(repo, lane_id)["state"] == "ready" and status(repo, lane_id)["review"] is None
    assert "review_detail" not in packet(repo, lane_id)


# --- stale reviews, reviews by hand, the reviewer cannot write --------------------------------------------

def test_a_lane_changed_after_its_review_is_refused_as_stale_until_reviewed_again(programme: Path) -> None:
    repo = programme
    configure(repo, "clean")
    lane_id = lane(repo, "stale")
    worktree = Path(status(repo, lane_id)["worktree"])
    (worktree / "calc.py").write_text("def add(a, b):\n    return a - b\n")
    assert cli(repo, "check", lane_id).returncode == 0  # the gates pass again: the packet is current
    refused = cli(repo, "accept", lane_id)
    assert refused.returncode == 2 and "the review is stale" in refused.stderr
    assert f"review again: `lanes-tui review {lane_id}`" in refused.stderr
    again = cli(repo, "review", lane_id)
    assert again.returncode == 0 and again.stdout.startswith("review: CLEAN by rev (openai)"), again
    assert cli(repo, "accept", lane_id).returncode == 0


def test_review_by_hand_reports_blocking_with_exit_1_and_refuses_a_running_lane(programme: Path) -> None:
    repo = programme
    configure(repo, "blocking", review_mode="off")  # off: only the lead's `review` runs one
    lane_id = lane(repo, "byhand")
    proc = cli(repo, "review", lane_id)
    assert proc.returncode == 1 and "review: BLOCKING by rev" in proc.stdout
    assert "calc.py:2: divides by zero" in proc.stdout
    assert status(repo, lane_id)["state"] == "rejected"
    record = launch_lane(repo, load_config(repo), LaunchRequest(prompt="sleep 30", slug="busy"))
    wait_state(repo, record.id, "running")
    busy = cli(repo, "review", record.id)
    assert busy.returncode != 0 and f"lane {record.id} is still running" in busy.stderr
    assert "Traceback" not in busy.stderr
    cli(repo, "abandon", record.id, "--force", check=True)


def test_the_reviewer_never_writes_to_the_lane(programme: Path) -> None:
    repo = programme
    configure(repo, "writer")
    lane_id = lane(repo, "written")
    worktree = Path(status(repo, lane_id)["worktree"])
    assert (worktree / "calc.py").read_text() == "def add(a, b): return a + b  # reviewed\n"
    assert not (worktree / "reviewer-note.txt").exists()
    out = (repo / ".lanes/state/lanes" / lane_id / REVIEW_OUTPUT).read_text()
    assert "LANES_WORKTREE=" in out and f"LANES_WORKTREE={worktree}\n" not in out  # it saw only its copy
    if os.geteuid() != 0:  # an ordinary user is stopped by the write bits as well
        assert "could not write calc.py" in out
    data = packet(repo, lane_id)
    assert data["review"] == "CLEAN" and data["review_detail"]["diff_digest"] == \
        lane_diff(repo, load_config(repo), lane_id).digest
    assert cli(repo, "accept", lane_id).returncode == 0


def test_the_review_slot_is_shared_across_repositories(programme: Path, tmp_path: Path) -> None:
    """With `[review] slots = 1`, a review waits while another holds the machine's only slot."""
    from lanes_tui.engine.core import slots
    from lanes_tui.engine.decisions.review.run import review_slot_dir

    repo = programme
    configure(repo, "clean")
    config = repo / ".lanes/config.toml"
    config.write_text(config.read_text().replace("timeout_s = 60\n", "timeout_s = 60\nslots = 1\n"))
    held = slots.try_acquire(review_slot_dir(), 1, {"lane": "other", "repo": str(tmp_path / "elsewhere")})
    assert held is not None
    try:
        record = launch_lane(repo, load_config(repo), LaunchRequest(prompt=WORK, slug="slot"))
        wait_state(repo, record.id, "reviewing")
        assert "waiting for one of [review] slots=1" in status(repo, record.id)["state_reason"]
    finally:
        held.release()
    wait_state(repo, record.id)
    assert status(repo, record.id)["review"] == "CLEAN"


# --- verification, relaunch findings ---------------------------------------------------------------------

def test_verify_records_the_evidence_and_goes_stale_when_the_lane_changes(programme: Path) -> None:
    repo = programme
    configure(repo, "clean", review_mode="off")
    lane_id = lane(repo, "verified")
    assert cli(repo, "verify", lane_id, "--evidence", "  ").returncode != 0
    done = cli(repo, "verify", lane_id, "--evidence", "ran add(2, 2) by hand: 4")
    assert done.returncode == 0, done.stderr
    data = packet(repo, lane_id)["verification"]
    assert data["evidence"] == "ran add(2, 2) by hand: 4" and data["by"] == "Test Lead"
    dry = cli(repo, "accept", lane_id, "--dry-run")
    assert "verified by Test Lead (" in dry.stdout and "ran add(2, 2) by hand: 4" in dry.stdout
    assert "STALE" not in dry.stdout
    (Path(status(repo, lane_id)["worktree"]) / "new.py").write_text("x = 1\n")
    cli(repo, "check", lane_id, check=True)
    assert "(STALE: the lane changed since)" in cli(repo, "accept", lane_id, "--dry-run").stdout


def test_a_relaunch_after_a_blocking_review_carries_the_findings(programme: Path) -> None:
    repo = programme
    configure(repo, "blocking")
    lane_id = lane(repo, "relaunch")
    proc = cli(repo, "recover", lane_id, "--relaunch")
    assert proc.returncode == 0, proc.stderr
    new_id = proc.stdout.strip().splitlines()[-1].split()[-1]
    record = json.loads((repo / ".lanes/state/lanes" / new_id / "lane.json").read_text())
    assert "> A reviewer (rev) blocked the previous attempt; fix these first:" in record["prompt"]
    assert "> - calc.py:2: divides by zero when b is 0" in record["prompt"]
    wait_state(repo, new_id)


# --- the pure parts ---------------------------------------------------------------------------------------

def test_the_prompt_holds_task_gates_diff_and_answer_form() -> None:
    text = review_prompt("x-a1", "add a square function", [{"command": "pytest", "status": "passed",
                                                            "exit_code": 0}], "diff --git a/a.py b/a.py\n+x\n")
    assert text.startswith(f"{REVIEW_MARKER}: lane x-a1\n")
    order = [text.index(h) for h in ("## Task", "## Gates", "## Diff", "## Answer form")]
    assert order == sorted(order) and "- `pytest`: passed (exit 0)" in text
    assert "```diff\ndiff --git a/a.py b/a.py\n+x\n```" in text and "REVIEW: BLOCKING" in text


def test_reviewer_text_reads_claude_codex_and_plain_output() -> None:
    claude = [{"type": "system", "subtype": "init", "session_id": "s"},
              {"type": "assistant", "message": {"content": [{"type": "text", "text": "- a.py:1: bad\nREVIEW: "
                                                                                     "BLOCKING"}]}},
              {"type": "result", "result": "REVIEW: BLOCKING", "total_cost_usd": 0.01}]
    text = reviewer_text("\n".join(json.dumps(m) for m in claude))
    assert text.splitlines() == ["- a.py:1: bad", "REVIEW: BLOCKING", "REVIEW: BLOCKING"]
    codex = json.dumps({"type": "item.completed", "item": {"type": "agent_message", "text": "REVIEW: CLEAN"}})
    assert reviewer_text(codex) == "REVIEW: CLEAN"
    assert reviewer_text("\x1b[1mREVIEW: CLEAN\x1b[0m\n{not json") == "REVIEW: CLEAN\n{not json"


def test_read_only_argv_turns_write_permissions_off() -> None:
    claude = ["claude", "-p", "--permission-mode", "acceptEdits", "--output-format", "stream-json"]
    assert read_only_argv(claude) == ["claude", "-p", "--permission-mode", "plan", "--output-format", "stream-json"]
    codex = ["codex", "exec", "--full-auto", "--sandbox=workspace-write", "--json", "-"]
    assert read_only_argv(codex) == ["codex", "exec", "--sandbox=read-only", "--json", "-"]
    assert read_only_argv(["aider", "--yes-always"]) == ["aider", "--dry-run", "--yes-always"]


def test_an_interrupted_review_is_settled_ready_with_the_review_missing(programme: Path) -> None:
    """The process running a review died: the reviewer left behind is stopped, its worktree removed,
    and the lane is back to ready with the review MISSING — never CLEAN, nobody read a verdict."""
    import subprocess

    from lanes_tui.engine.git.review_tree import add_review_tree, review_tree_path, snapshot_commit
    from lanes_tui.engine.state.paths import StatePaths
    from lanes_tui.engine.state.store import LaneStore

    repo = programme
    configure(repo, "clean", review_mode="off")
    lane_id = lane(repo, "interrupted")
    row = status(repo, lane_id)
    root = repo.parent / "worktrees"
    tree = add_review_tree(repo, root, lane_id, snapshot_commit(Path(row["worktree"]), lane_id))
    assert tree == review_tree_path(root, repo, lane_id) and (tree / "calc.py").is_file()
    env = {**os.environ, "LANES_LANE": lane_id, "LANES_HOME": str(repo / ".lanes" / "state")}
    reviewer_left = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"], env=env,
                                     start_new_session=True)
    try:
        store = LaneStore(StatePaths(repo))
        store.transition(store.read(lane_id), "reviewing", "rev (openai) reviews the diff")
        after = status(repo, lane_id)  # status reconciles first
        assert after["state"] == "ready" and after["review"] == "MISSING", after
        assert "its review was interrupted" in after["state_reason"]
        assert f"`lanes-tui review {lane_id}` runs it again" in after["state_reason"]
        assert reviewer_left.wait(timeout=10) is not None  # stopped by the reconcile
        assert not tree.exists() and ".review" not in git(repo, "worktree", "list")
        assert packet(repo, lane_id)["review_detail"]["verdict"] == "MISSING"
    finally:
        if reviewer_left.poll() is None:
            reviewer_left.kill()
            reviewer_left.wait()
