"""`lanes-tui peek ID` shows a structured lane readable; `--raw` shows output.log's lines as written.

The lane's output.log holds what a chain that fell back twice would leave: recorded claude
stream-json, the supervisor's banner, recorded codex and gemini lines, and a plain line. A lane on a
cluster node (`[runner] kind = "ray"`, the runner stood in for by `tests.fake_remote`) peeks the same.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from lanes_tui.app.cli.main import main
from lanes_tui.engine.state.model import LaneRecord
from lanes_tui.engine.state.paths import StatePaths
from lanes_tui.engine.state.store import LaneStore
from tests.fake_remote import FakeRemote, fake_ray, make_record, ray_config
from tests.helpers import cli, write_config

__all__ = ["fake_ray"]  # the fixture, re-exported for pytest

SAMPLES = Path(__file__).parent / "readable_samples"
LOG = "".join([
    (SAMPLES / "claude_billing.jsonl").read_text(encoding="utf-8"),
    "=== lanes-tui: codex (gpt-5.5) starting ===\n",
    (SAMPLES / "codex_run.jsonl").read_text(encoding="utf-8"),
    "=== lanes-tui: gemini (gemini-2.5-pro) starting ===\n",
    (SAMPLES / "gemini_run.jsonl").read_text(encoding="utf-8"),
    "lanes-tui: the chain ended\n",
])
READABLE = [
    "# claude · model claude-sonnet-5-5 · session c9ded043-7a20-420a-b556-f17e7ef3520e",
    "! error (billing_error): Credit balance is too low",
    "! failed (API 400)",
    "= ended · 1 turn · 0.6 s · $0.0000",
    "=== lanes-tui: codex (gpt-5.5) starting ===",
    "# codex · thread 01a23cc8-8681-7772-9208-8908494c452a",
    "→ edit: add /work/lane/hello.txt",
    "→ $ cat hello.txt",
    "  ⎿ exit 0: hello",
    "Wrote hello.txt and ran cat.",
    "= turn done · tokens 3600 in (+1800 cached, +300 written) · 240 out (+60 reasoning)",
    "=== lanes-tui: gemini (gemini-2.5-pro) starting ===",
    "# gemini · model gemini-2.5-pro · session dc1fb898-5283-42e4-9634-603adc6355a1",
    "> write hello.txt then run a command",
    "→ write_file: hello.txt",
    "  ⎿ ok",
    "→ run_shell_command: echo ran > ran.txt",
    "  ⎿ ok",
    "wrote hello.txt",
    "= done · 2 tool calls · 3.5 s · tokens 3600 in · 240 out",
    "lanes-tui: the chain ended",
]


def local_lane(repo: Path, lane_id: str = "chain-a1") -> Path:
    """A lane record as the launcher writes it, and its output.log; no supervisor is needed to peek."""
    write_config(repo)
    paths = StatePaths(repo)
    paths.ensure()
    LaneStore(paths).create(LaneRecord(
        id=lane_id, slug="chain", attempt=1, task_type="backend", prompt="p", chain=["claude", "codex", "gemini"],
        repo=str(repo), worktree=str(repo.parent / "wt" / lane_id), branch=f"lane/{lane_id}", base_sha="0" * 40,
        target_branch="main", state="exited", result="LANE-FAILED"))
    output = paths.lane(lane_id).output
    output.write_text(LOG, encoding="utf-8")
    return output


def test_peek_is_readable_and_raw_is_as_written(repo: Path) -> None:
    local_lane(repo)
    shown = cli(repo, "peek", "chain-a1", "--lines", "100", check=True)  # the real command line, piped
    assert shown.stdout.splitlines() == READABLE
    raw = cli(repo, "peek", "chain-a1", "--lines", "100", "--raw", check=True)
    assert raw.stdout == LOG
    tail = cli(repo, "peek", "chain-a1", "--lines", "3", check=True)
    assert tail.stdout.splitlines() == READABLE[-3:]  # N readable lines, not N raw ones
    helped = cli(repo, "peek", "--help", check=True).stdout
    assert "--raw" in helped and "readable" in helped


def test_peek_json_says_which_form(repo: Path, capsys: pytest.CaptureFixture[str]) -> None:
    local_lane(repo)
    assert main(["--repo", str(repo), "peek", "chain-a1", "--lines", "2", "--json"]) == 0
    assert json.loads(capsys.readouterr().out) == {"lane": "chain-a1", "source": "output", "form": "readable",
                                                   "lines": READABLE[-2:]}
    assert main(["--repo", str(repo), "peek", "chain-a1", "--lines", "1", "--json", "--raw"]) == 0
    assert json.loads(capsys.readouterr().out) == {"lane": "chain-a1", "source": "output", "form": "raw",
                                                   "lines": ["lanes-tui: the chain ended"]}


def test_peek_of_a_lane_on_a_cluster_node_is_readable_too(repo: Path, fake_ray: type[FakeRemote],
                                                          capsys: pytest.CaptureFixture[str]) -> None:
    ray_config(repo)
    make_record(repo, "cloud-a1")
    StatePaths(repo).lane("cloud-a1").output.write_text(LOG, encoding="utf-8")
    assert main(["--repo", str(repo), "peek", "cloud-a1", "--lines", "100"]) == 0
    assert capsys.readouterr().out.splitlines() == READABLE
    assert main(["--repo", str(repo), "peek", "cloud-a1", "--lines", "100", "--raw"]) == 0
    assert capsys.readouterr().out == LOG
