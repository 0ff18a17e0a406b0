"""A link an agent plants never makes lanes-tui read the lead's other files (issue 28, item 7).

An agent runs as the lead's user, so it can plant symlinks in the lead checkout with an ordinary
`ln -s`. A prompt file (`run --prompt-file`, a plan's `prompt_file`) is sent to a provider, and a
`[lanes] copy` file is handed to the next lane's agent: followed blindly, either would carry the
lead's secrets out. Each resolves its links and refuses what lies outside the repository (or in its
`.git`), in one line.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from lanes_tui.engine.core.errors import LanesError
from lanes_tui.engine.core.limits import repository_file
from tests.helpers import cli, run_lane, status, wait_state, write_config


@pytest.fixture(autouse=True)
def uncontained(monkeypatch: pytest.MonkeyPatch) -> None:
    """Under the kernel's confinement the agent's writes here are refused outright (tests/test_landlock.py);
    these lanes run uncontained, as on a machine without Landlock, where lanes-tui must still hold."""
    monkeypatch.setenv("LANES_TUI_LANDLOCK", "off")

#: The agent: plants links in the lead checkout (found from LANES_HOME) with plain `ln -s`.
PLANTER = """\
import os, pathlib, subprocess, sys
secret = sys.argv[-1].strip().splitlines()[-1]
lead = pathlib.Path(os.environ["LANES_HOME"]).parent.parent
(lead / ".env").unlink()
for name in ("task.md", ".env", "prompts/api.md"):
    (lead / name).parent.mkdir(exist_ok=True)
    subprocess.run(["ln", "-s", secret, str(lead / name)], check=True)
subprocess.run(["ln", "-s", "../.git/config", str(lead / "prompts" / "config.md")], check=True)
print("planted", flush=True)
"""


def test_links_an_agent_planted_feed_no_prompt_and_no_copy(repo: Path, tmp_path: Path) -> None:
    secret = tmp_path / "home" / "credentials"
    secret.parent.mkdir()
    secret.write_text("AWS_SECRET=lead-only-value\n")
    (repo / ".env").write_text("SAFE=1\n")
    agent = tmp_path / "planter.py"
    agent.write_text(PLANTER)
    write_config(repo, allow_uncontained=True, lanes_extra='copy = [".env"]',
                 extra=f'[providers.planter]\nargv = ["{{python}}", "{agent}"]\nprompt = "arg"\n')
    planter = run_lane(repo, str(secret), lane_id="planter", extra=("--lane", "planter"))
    wait_state(repo, planter)
    assert (repo / "task.md").is_symlink() and (repo / ".env").is_symlink()  # the agent really planted them

    refused = cli(repo, "run", "--prompt-file", "task.md", "--id", "leak")
    lines = refused.stderr.strip().splitlines()
    assert refused.returncode == 2 and len(lines) == 1, refused.stderr
    assert lines[0] == (f"lanes-tui: --prompt-file task.md (a link to {secret}) is outside the repository {repo} "
                        "— copy the file into the repository, or give the text with --prompt")
    assert not (repo / ".lanes" / "state" / "lanes" / "leak-a1").exists()

    plan = repo / "plan.toml"
    for target, why in (("prompts/api.md", "is outside the repository"), ("prompts/config.md", ".git folder")):
        plan.write_text(f'[plan]\nname = "p"\n\n[[tickets]]\nid = "api"\ntitle = "t"\nprompt_file = "{target}"\n')
        checked = cli(repo, "plan", "check", str(plan))
        lines = checked.stderr.strip().splitlines()
        assert checked.returncode == 2 and len(lines) == 1 and why in lines[0], checked.stderr
        assert "lead-only-value" not in checked.stdout + checked.stderr

    # The next lane's copy of `.env` is skipped with its reason; the secret never reaches its worktree.
    lane = run_lane(repo, "say copied?", lane_id="next")
    wait_state(repo, lane)
    worktree = Path(status(repo, lane)["worktree"])
    assert not (worktree / ".env").exists()
    assert not any("lead-only-value" in p.read_text(errors="replace") for p in worktree.rglob("*") if p.is_file()
                   and ".git" not in p.parts)
    log = repo / ".lanes" / "state" / "lanes" / lane / "events.jsonl"
    events = [json.loads(line) for line in log.read_text().splitlines()]
    skipped = [e for e in events if e["type"] == "copy-skipped"]
    assert [e["path"] for e in skipped] == [".env"]
    assert skipped[0]["reason"] == (f"copy entry {repo / '.env'} (a link to {secret}) is outside the repository "
                                    f"{repo}: not copied")


def test_repository_file_follows_links_inside_and_refuses_the_rest(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    (repo / "docs").mkdir(parents=True)
    (repo / ".git").mkdir()
    (repo / "docs" / "task.md").write_text("do it\n")
    (repo / "link.md").symlink_to("docs/task.md")
    (repo / "up.md").symlink_to("../outside.md")
    (repo / "git.md").symlink_to(".git/config")
    assert repository_file(repo / "docs" / "task.md", repo, "f", "fix") == repo / "docs" / "task.md"
    assert repository_file(repo / "link.md", repo, "f", "fix") == (repo / "docs" / "task.md").resolve()
    for bad, why in ((repo / "up.md", "outside the repository"), (repo / "git.md", ".git folder"),
                     (Path("/etc/passwd"), "outside the repository"), (repo / ".." / "x", "outside")):
        try:
            repository_file(bad, repo, "prompt file", "keep it inside")
        except LanesError as exc:
            assert why in exc.what and exc.fix == "keep it inside", exc
        else:
            raise AssertionError(f"{bad} was not refused")
