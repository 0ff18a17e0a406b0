"""aider 0.86.2, the real one, as a lane through lanes-tui against the scripted model server.

The preset runs as shipped (`aider --yes-always --no-auto-commits --no-gitignore --message PROMPT`); the
lead's side is configuration only: a key, the base URL and the model in the environment aider gets
(`AIDER_OPENAI_API_BASE`, `OPENAI_API_KEY`, `AIDER_MODEL`), `aider` on PATH, a git identity in its home.
aider is told to use gpt-4o, whose edit format is "diff" (SEARCH/REPLACE blocks), over Chat Completions.

Deadlines come from what a run takes here: aider starts in 3-6 s, answers in one request; under its own
retry loop it waits 0.25 s doubling to 32 s (about 64 s in all) before giving up on a quota error.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from lanes_tui.engine.channels.plain import TOKENS_RE, parse_count
from lanes_tui.engine.config.settings import load_config
from lanes_tui.engine.decisions.review.run import writer_families
from lanes_tui.engine.state.paths import StatePaths
from lanes_tui.engine.state.store import LaneStore
from tests.helpers import cli, output, status, write_config
from tests.real_cli.conftest import require_cli
from tests.real_cli.model_server.openai_chat import REPLY_MARK, is_auxiliary
from tests.real_cli.model_server.script import Fail, RunCommand, Say, Script, WriteFile
from tests.real_cli.model_server.server import ModelServer

#: One aider run that answers at once: start-up (3-6 s here, idle) with room for a loaded machine.
RUN_S = 90
#: aider's own retry loop on a quota error: 0.25 s doubling to 32 s, ~64 s of sleep, plus its requests.
QUOTA_S = RUN_S + 64 * 2
#: A file the repository tracks: aider appends to it (an empty SEARCH). A NEW file it `git add`s first,
#: into the lane's own object store (test_aider_creates_a_new_file_in_a_contained_lane).
FILE = "README.md"
WRITE = Script(steps=(WriteFile(FILE, "hello from aider\n"), RunCommand("echo ran > ran.txt"), Say("edited README.md")))
WRITTEN = "# project\nhello from aider\n"
#: The gate checks the agent's file in the lane's worktree.
GATE = ('commands = ["{python} -c \\"import pathlib, sys; '
        "sys.exit(pathlib.Path('README.md').read_text().splitlines()[-1] != 'hello from aider')\\\"\"]")
FAILING_GATE = "commands = ['{python} -c \"raise SystemExit(1)\"']"


@dataclass
class Aider:
    """The lead's side of an aider lane: the repository, the environment `lanes-tui` runs in, the server."""

    repo: Path
    env: dict[str, str]
    server: ModelServer

    def run(self, lane_id: str, prompt: str = "Add a line saying hello from aider to README.md.") -> str:
        proc = cli(self.repo, "run", "--prompt", prompt, "--id", lane_id, env=self.env)
        assert proc.returncode == 0, proc.stderr
        return proc.stdout.strip().splitlines()[-1]

    def wait(self, lane: str, timeout: float = RUN_S) -> dict[str, Any]:
        proc = cli(self.repo, "wait", lane, "--timeout", str(timeout), env=self.env, timeout=timeout + 30)
        assert proc.returncode == 0, f"{lane} did not settle: {proc.stderr} {output(self.repo, lane)[-3000:]}"
        row: dict[str, Any] = status(self.repo, lane)
        return row

    def chat_requests(self) -> list[Any]:
        """The main requests (aider's weak-model summaries and commit messages left out)."""
        return [r.body for r in self.server.main_requests("/chat/completions") if not is_auxiliary(r.body)]


@pytest.fixture
def aider(repo: Path, tmp_path: Path, model_server: ModelServer) -> Iterator[Aider]:
    program = require_cli("aider")
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "aider").symlink_to(program)  # the preset's argv[0] is `aider`, found on PATH
    home = tmp_path / "home"
    home.mkdir()
    # Without an identity aider writes one into the repository's shared .git/config, which the lane's
    # fence refuses: aider crashes (CONFIG-ERROR by AIDER_CONFIG). A lead's home has one.
    (home / ".gitconfig").write_text("[user]\n\tname = Lane Agent\n\temail = agent@example.invalid\n")
    env = {**os.environ, "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}", "HOME": str(home),
           "AIDER_MODEL": "gpt-4o", "AIDER_OPENAI_API_BASE": f"{model_server.url}/v1",
           "OPENAI_API_KEY": "sk-scripted-test", "AIDER_ANALYTICS": "false", "AIDER_CHECK_UPDATE": "false",
           "AIDER_SHOW_RELEASE_NOTES": "false"}
    env.pop("ANTHROPIC_API_KEY", None)
    yield Aider(repo, env, model_server)
    cli(repo, "stop", "--all", env=env)


def git(cwd: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True, text=True).stdout.strip()


def record(repo: Path, lane: str) -> Any:
    return LaneStore(StatePaths(repo)).read(lane)


def test_aider_writes_the_file_is_metered_gated_and_accepted(aider: Aider) -> None:
    aider.server.set_script(WRITE)
    write_config(aider.repo, chains='backend = ["aider"]', gates=GATE, lanes_extra="protected_branches = []")
    lane = aider.run("hello")
    row = aider.wait(lane)
    log = output(aider.repo, lane)
    assert (row["state"], row["result"]) == ("ready", "OK"), log[-3000:]
    # The label and the review family are the model aider ran, read from AIDER_MODEL.
    assert "=== lanes-tui: aider (gpt-4o) starting ===" in log
    assert [(a["provider"], a["model"]) for a in row["providers_tried"]] == [("aider", "gpt-4o")]
    assert writer_families(load_config(aider.repo), record(aider.repo, lane)) == {"openai"}
    # peek shows what aider did, as aider printed it.
    peek = cli(aider.repo, "peek", lane, "--lines", "200", env=aider.env)
    assert peek.returncode == 0 and f"Applied edit to {FILE}" in peek.stdout
    # Tokens and cost are aider's own `Tokens:` line.
    tokens = TOKENS_RE.search(log)
    assert tokens is not None, log[-2000:]
    assert row["tokens"]["input"] == parse_count(tokens["sent"]) and row["tokens"]["output"] == parse_count(
        tokens["received"])
    assert row["cost_usd"] == pytest.approx(float(tokens["session"]))
    # One main request; the server's reply was a SEARCH/REPLACE block because aider asked for one.
    bodies = aider.chat_requests()
    assert len(bodies) == 1 and any("SEARCH/REPLACE" in str(m.get("content")) for m in bodies[0]["messages"])
    worktree = Path(row["worktree"])
    assert (worktree / FILE).read_text() == WRITTEN
    # The shell command was offered, and not run: --yes-always answers "no" to shell commands.
    assert "echo ran > ran.txt" in log and not (worktree / "ran.txt").exists()
    # --no-gitignore: no .gitignore; aider's own files are there but excluded from the lane's diff.
    assert not (worktree / ".gitignore").exists()
    assert (worktree / ".aider.chat.history.md").is_file()
    assert git(worktree, "status", "--porcelain", "--untracked-files=all").split() == ["M", FILE]
    events = (aider.repo / ".lanes" / "state" / "lanes" / lane / "events.jsonl").read_text()
    assert '"gate' in events  # the gate ran (and passed: the lane is ready)
    accepted = cli(aider.repo, "accept", lane, env=aider.env)
    assert accepted.returncode == 0, accepted.stderr
    assert git(aider.repo, "show", "--name-only", "--format=", "HEAD").splitlines() == [FILE]
    assert (aider.repo / FILE).read_text() == WRITTEN


def test_recover_relaunch_restores_aiders_chat(aider: Aider) -> None:
    aider.server.set_script(Script(steps=(WriteFile(FILE, "one\n"), Say("added one"),
                                          WriteFile(FILE, "two\n"), Say("added two"))))
    write_config(aider.repo, chains='backend = ["aider"]', gates=FAILING_GATE)
    lane = aider.run("again", "Add a line to README.md.")
    row = aider.wait(lane)
    assert row["state"] == "rejected" and row["session_id"] == ".aider.chat.history.md", row
    relaunched = cli(aider.repo, "recover", lane, "--relaunch", env=aider.env)
    assert relaunched.returncode == 0, relaunched.stderr
    new = relaunched.stdout.strip().splitlines()[-1]
    row = aider.wait(new)
    log = output(aider.repo, new)
    assert "resumed session .aider.chat.history.md" in log, log[-2000:]
    bodies = aider.chat_requests()
    # aider may ask again after the resumed reply (it adds a file the reply names and reflects): 2 or more.
    assert len(bodies) >= 2, log[-3000:]
    # The second conversation carries the first reply back (aider read its history): turn 2 was answered.
    earlier = [m for m in bodies[1]["messages"] if m.get("role") == "assistant" and REPLY_MARK in str(m["content"])]
    assert len(earlier) == 1 and "one" in str(earlier[0]["content"])
    assert any("Attempt 2 of this task" in str(m.get("content")) for m in bodies[1]["messages"])
    worktree = Path(row["worktree"])
    assert (worktree / FILE).read_text() == "# project\ntwo\n"  # turn 2, in a worktree without turn 1's change


def test_an_invalid_key_is_a_config_error_and_stops_the_chain(aider: Aider) -> None:
    aider.server.set_script(Script(fail=Fail("auth")))
    write_config(aider.repo, chains='backend = ["aider", "sim"]')
    lane = aider.run("auth", "Add a line to README.md.\nwrite sim.txt from the sim")
    row = aider.wait(lane)
    assert row["result"] == "CONFIG-ERROR", output(aider.repo, lane)[-2000:]
    assert "AuthenticationError" in row["state_reason"] or "AuthenticationError" in json.dumps(row["providers_tried"])
    assert [a["provider"] for a in row["providers_tried"]] == ["aider"]  # the chain stops


def test_a_quota_error_is_out_of_budget_and_the_chain_moves_to_the_sim(aider: Aider) -> None:
    aider.server.set_script(Script(fail=Fail("billing")))
    # aider sleeps up to 32 s between attempts without a word: an idle timeout above that (the watchdog
    # reading aider's `Retrying in` lines is the results branch's part).
    write_config(aider.repo, chains='backend = ["aider", "sim"]', idle_timeout_s=45)
    lane = aider.run("quota", "Add a line to README.md.\nwrite sim.txt from the sim")
    row = aider.wait(lane, timeout=QUOTA_S)
    log = output(aider.repo, lane)
    assert [(a["provider"], a["result"]) for a in row["providers_tried"]] == [
        ("aider", "OUT-OF-BUDGET"), ("sim", "OK")], log[-3000:]
    assert "exceeded" in row["providers_tried"][0]["reason"]
    assert "Retrying in 32.0 seconds" in log  # aider retried by itself, then gave up (and exited 0)
    assert (Path(row["worktree"]) / "sim.txt").is_file()


@pytest.mark.parametrize("kind", ["rate_limit", "overloaded", "server"])
def test_aider_retries_a_rate_limit_or_overload_and_finishes(aider: Aider, kind: str) -> None:
    # The SDK under litellm retries twice by itself (3 requests), then aider says `Retrying in 0.2
    # seconds...` and asks again: 4 failures, then the answer.
    aider.server.set_script(Script(steps=WRITE.steps, fail=Fail(kind, times=4)))
    write_config(aider.repo, chains='backend = ["aider"]')
    lane = aider.run(kind)
    row = aider.wait(lane)
    log = output(aider.repo, lane)
    assert re.search(r"Retrying in 0\.2 seconds", log), log[-3000:]
    assert (row["state"], row["result"]) == ("ready", "OK"), log[-3000:]
    assert len(aider.chat_requests()) == 5
    assert (Path(row["worktree"]) / FILE).read_text() == WRITTEN


def test_a_model_that_never_answers_is_a_stall(aider: Aider) -> None:
    aider.server.set_script(Script(hang=True))
    idle = 8  # aider's start-up prints within a second or two of each other; then it waits on the model
    write_config(aider.repo, chains='backend = ["aider", "sim"]', idle_timeout_s=idle)
    lane = aider.run("hang")
    row = aider.wait(lane, timeout=RUN_S + idle)
    assert row["result"] == "LANE-STALLED", output(aider.repo, lane)[-2000:]
    assert row["providers_tried"][0]["provider"] == "aider"


def test_aider_that_changed_nothing_is_not_ready(aider: Aider) -> None:
    """aider exits 0 whatever happened: with no change the lane says so, and nothing is offered to accept."""
    aider.server.set_script(Script(steps=(Say("Nothing to change."),)))
    write_config(aider.repo, chains='backend = ["aider"]')
    lane = aider.run("nothing")
    row = aider.wait(lane)
    assert (row["state"], row["result"]) == ("exited", "NO-CHANGES"), row
    assert "changed nothing" in row["state_reason"], row


def test_aider_creates_a_new_file_in_a_contained_lane(aider: Aider) -> None:
    """aider `git add`s a file it creates before writing it: the lane's own object store takes the blob
    (the shared one stays read-only), and accept commits the file from the worktree."""
    aider.server.set_script(Script(steps=(WriteFile("new.txt", "new\n"), Say("wrote new.txt"))))
    write_config(aider.repo, chains='backend = ["aider"]')
    lane = aider.run("new-file", "Write new.txt.")
    row = aider.wait(lane)
    assert (Path(row["worktree"]) / "new.txt").read_text() == "new\n", output(aider.repo, lane)[-2000:]
    assert (row["state"], row["result"]) == ("ready", "OK"), row
