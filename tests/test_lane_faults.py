"""A lane whose agent damages its own state folder is that lane's problem only (issue 28, item 7).

Real agents, with ordinary commands: one tears its `origin.json`, one makes its lane folder
unwritable (`chmod 0500`). Each time the supervisor ends the lane with the reason instead of dying,
`status` shows the one lane's problem beside a healthy lane it leaves alone, and `abandon --force`
cleans the lane. File modes apply to root only without `CAP_DAC_OVERRIDE`, so the commands of the
unwritable case run under `setpriv` with it dropped (as `tests/test_state_faults.py` does).

Under the kernel's confinement an agent cannot write its state folder at all (`tests/test_landlock.py`);
these lanes run uncontained (`LANES_TUI_LANDLOCK=off`, `allow_uncontained`), as on a machine without
Landlock, where the damage is possible and must stay the one lane's problem.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conftest import git
from tests.helpers import as_user, cli, run_lane, status, text_of, wait_for, wait_state, write_config

#: The agent: damages its own lane folder as its task says (`tear` or `lock`), then ends well.
DAMAGER = """\
import os, pathlib, sys
lane = pathlib.Path(os.environ["LANES_HOME"]) / "lanes" / os.environ["LANES_LANE"]
pathlib.Path("work.txt").write_text("done\\n")
if sys.argv[-1].strip().endswith("tear"):
    (lane / "origin.json").write_text('{"id": "torn-a1", "repo": ')
else:
    os.chmod(lane, 0o500)
print("damaged", flush=True)
"""


def _config(repo: Path, tmp_path: Path) -> None:
    agent = tmp_path / "damager.py"
    agent.write_text(DAMAGER)
    write_config(repo, extra=f'[providers.damager]\nargv = ["{{python}}", "{agent}"]\nprompt = "arg"\n',
                 lanes_extra="allow_uncontained = true")


@pytest.fixture(autouse=True)
def uncontained(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LANES_TUI_LANDLOCK", "off")


def _lane_dir(repo: Path, lane: str) -> Path:
    return repo / ".lanes" / "state" / "lanes" / lane




def test_a_torn_origin_is_that_lanes_problem_and_abandon_force_cleans_it(repo: Path, tmp_path: Path) -> None:
    _config(repo, tmp_path)
    healthy = run_lane(repo, "write ok.txt ok", lane_id="healthy")
    torn = run_lane(repo, "tear", lane_id="torn", extra=("--lane", "damager"))
    wait_state(repo, torn)
    wait_state(repo, healthy)
    row = status(repo, torn)
    assert row["state"] == "exited" and "origin.json cannot be trusted" in row["state_reason"], row
    assert "origin.json cannot be trusted" in row["problem"] and f"abandon {torn} --force" in row["problem"]
    assert "Traceback" not in text_of(_lane_dir(repo, torn) / "supervisor.log")  # ended, did not die
    other = status(repo, healthy)
    assert (other["state"], other["problem"]) == ("ready", None)
    text = cli(repo, "status")
    assert text.returncode == 0 and f"problem: lane {torn}: " in text.stdout, text.stdout

    refused = cli(repo, "abandon", torn)
    assert refused.returncode == 2 and "origin.json cannot be trusted" in refused.stderr
    worktree = Path(row["worktree"])
    done = cli(repo, "abandon", torn, "--force")
    assert done.returncode == 0, done.stderr
    assert "set the damaged origin.json aside as origin.json.damaged-" in done.stdout
    assert status(repo, torn)["state"] == "abandoned" and status(repo, torn)["problem"] is None
    assert not worktree.exists() and git(repo, "branch", "--list", f"lane/{torn}") == ""
    kept = list(_lane_dir(repo, torn).glob("origin.json.damaged-*"))
    assert len(kept) == 1 and kept[0].read_text() == '{"id": "torn-a1", "repo": '
    assert status(repo, healthy)["state"] == "ready" and git(repo, "branch", "--list", f"lane/{healthy}") != ""


def test_an_unwritable_lane_folder_ends_failed_resource_and_abandon_force_cleans_it(repo: Path,
                                                                                   tmp_path: Path) -> None:
    _config(repo, tmp_path)
    started = as_user(repo, "run", "--prompt", "lock", "--id", "locked", "--lane", "damager")
    assert started.returncode == 0, started.stderr
    locked = started.stdout.strip().splitlines()[-1]
    healthy = as_user(repo, "run", "--prompt", "write ok.txt ok", "--id", "healthy").stdout.strip().splitlines()[-1]
    wait_for(lambda: status(repo, locked)["state"] in ("exited", "lost", "ready"), timeout=60)
    wait_state(repo, healthy)
    row = status(repo, locked)
    assert (row["state"], row["result"]) == ("exited", "FAILED-RESOURCE"), row
    assert "the lane's state could not be written (Permission denied" in row["state_reason"]
    assert "made " in row["state_reason"] and "writable again" in row["state_reason"]
    receipt = json.loads((_lane_dir(repo, locked) / "receipt.json").read_text())
    assert receipt["result"] == "FAILED-RESOURCE"
    assert "Traceback" not in text_of(_lane_dir(repo, locked) / "supervisor.log")

    # Left unwritable while the record still says `running` (a daemon of the agent did it again):
    # status must write to settle it, cannot, and shows it as the lane's problem; the others are fine.
    record = _lane_dir(repo, locked) / "lane.json"
    data = json.loads(record.read_text())
    data["state"] = "running"
    record.write_text(json.dumps(data))
    _lane_dir(repo, locked).chmod(0o500)
    try:
        shown = as_user(repo, "status", "--json")
        assert shown.returncode == 0 and "Traceback" not in shown.stderr, shown.stderr
        rows = {r["id"]: r for r in json.loads(shown.stdout)}
        assert "is not writable" in rows[locked]["problem"] and f"chmod u+rwx {_lane_dir(repo, locked)}" in \
            rows[locked]["problem"]
        assert (rows[healthy]["state"], rows[healthy]["problem"]) == ("ready", None)
        done = as_user(repo, "abandon", locked, "--force")
        assert done.returncode == 0, done.stderr
        assert f"made {_lane_dir(repo, locked)} writable again (0700)" in done.stdout
    finally:
        _lane_dir(repo, locked).chmod(0o700)
    assert status(repo, locked)["state"] == "abandoned"
    assert git(repo, "branch", "--list", f"lane/{locked}") == "" and status(repo, healthy)["state"] == "ready"
