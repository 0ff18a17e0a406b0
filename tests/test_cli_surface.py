"""The command line as a lead types it (issue 32, item 5): global options before or after the command,
`-q` and `-v`, `status` on a broken config, and completion that offers a command only the lanes it can
act on. Real `lanes-tui` processes on real repositories; the completion runs in a real bash.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.completion_shells import bash_complete, env_with_lanes_tui, fish_complete, zsh_complete
from tests.helpers import cli, wait_state, write_config

PY = sys.executable


def one_line(proc: subprocess.CompletedProcess[str], code: int, *parts: str) -> None:
    assert proc.returncode == code, (proc.returncode, proc.stdout, proc.stderr)
    assert len(proc.stderr.strip().splitlines()) == 1, proc.stderr
    for part in parts:
        assert part in proc.stderr, (part, proc.stderr)


def state_lane(repo: Path, lane: str, state: str, reason: str = "") -> None:
    """A lane folder with a record in `state` (what the completion lister reads; nothing runs)."""
    folder = repo / ".lanes" / "state" / "lanes" / lane
    folder.mkdir(parents=True)
    (folder / "lane.json").write_text(json.dumps({"id": lane, "state": state, "state_reason": reason}))


# --- global options after the command ---------------------------------------------------------------------

def test_global_options_go_before_or_after_the_command(repo: Path, tmp_path: Path) -> None:
    """From outside the repository, `--repo` finds it in either place, for commands of every module."""
    write_config(repo)
    state_lane(repo, "seen-a1", "ready")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    commands = [("status", "--json"), ("inbox", "--json"), ("plan", "status", "--json"), ("providers", "--json"),
                ("show-chain", "backend", "--json"), ("__complete", "lanes")]
    for command in commands:
        before = cli(elsewhere, "--repo", str(repo), *command)
        after = cli(elsewhere, *command, "--repo", str(repo))
        assert before.returncode == 0, (command, before.stderr)
        assert (after.returncode, after.stdout) == (0, before.stdout), (command, after.stderr)
        assert "unrecognized arguments" not in after.stderr
    assert "seen-a1" in cli(elsewhere, "status", "--repo", str(repo)).stdout
    # A plan subcommand takes it too, and the one after the command wins over the one before.
    other = tmp_path / "other"
    other.mkdir()
    assert cli(elsewhere, "--repo", str(other), "__complete", "lanes", "--repo", str(repo)).stdout.split() == \
        ["seen-a1"]
    # --debug after the command writes the same log.
    log = repo / ".lanes" / "state" / "logs" / "lanes-tui.log"
    assert cli(repo, "status", "--debug").returncode == 0
    assert "lanes-tui status --debug" in log.read_text()
    # The dashboard's own options still go before the command only: one line, exit 2.
    one_line(cli(repo, "status", "--demo"), 2, "unrecognized arguments: --demo")


def test_quiet_and_verbose_after_the_command_and_never_together(repo: Path) -> None:
    write_config(repo)
    assert cli(repo, "status").stdout.startswith("no lanes yet")
    assert cli(repo, "status", "-q").stdout == ""
    assert cli(repo, "-q", "status").stdout == ""
    one_line(cli(repo, "-q", "status", "-v"), 2, "-q and -v do not go together")
    one_line(cli(repo, "-q", "-v", "status"), 2, "-q and -v do not go together")


# --- -q and -v --------------------------------------------------------------------------------------------

def test_quiet_run_prints_the_lane_id_alone_and_verbose_status_the_reasons(repo: Path) -> None:
    write_config(repo)
    loud = cli(repo, "run", "--prompt", "write a.txt one\n", "--id", "loud", check=True)
    assert loud.stdout.splitlines()[0].startswith("started lane loud-a1 in ") and loud.stdout.endswith("loud-a1\n")
    quiet = cli(repo, "-q", "run", "--prompt", "write b.txt two\n", "--id", "quiet", check=True)
    assert (quiet.stdout, quiet.stderr) == ("quiet-a1\n", "")
    for lane in ("loud-a1", "quiet-a1"):
        wait_state(repo, lane)
    plain = cli(repo, "status", check=True).stdout
    detailed = cli(repo, "status", "-v", check=True).stdout
    assert "why:" not in plain
    reasons = [line for line in detailed.splitlines() if line.startswith("  why: ")]
    assert len(reasons) == 2, detailed
    assert [line for line in detailed.splitlines() if not line.startswith("  why: ")] == plain.splitlines()


def test_verbose_prints_the_engines_log_records_on_stderr(repo: Path) -> None:
    """A lane record that cannot be read is skipped by reconcile with an INFO record: `-v` shows it,
    `-vv` adds DEBUG, the default shows neither."""
    write_config(repo)
    folder = repo / ".lanes" / "state" / "lanes" / "garbled-a1"
    folder.mkdir(parents=True)
    (folder / "lane.json").write_text("{not json")
    plain = cli(repo, "status")
    assert "skipped lane garbled-a1" not in plain.stderr
    verbose = cli(repo, "status", "-v")
    assert verbose.returncode == 0, verbose.stderr
    records = [line for line in verbose.stderr.splitlines() if "skipped lane garbled-a1" in line]
    assert len(records) == 1 and records[0].startswith("lanes-tui: INFO lanes_tui.engine."), verbose.stderr
    assert "garbled-a1" in verbose.stdout  # the row is there as always, with its problem


# --- status on a broken config ------------------------------------------------------------------------------

def test_status_reports_a_broken_config_and_still_lists_the_lanes(repo: Path) -> None:
    config = write_config(repo)
    state_lane(repo, "kept-a1", "ready")  # nothing runs: its record is enough for status
    good = cli(repo, "status")
    assert (good.returncode, good.stderr) == (0, "")
    config.write_text(config.read_text().replace("max_parallel = 6", "max_paralel = 6"))
    refused = cli(repo, "run", "--prompt", "say hi\n")
    assert refused.returncode == 2 and "max_paralel" in refused.stderr
    shown = cli(repo, "status")
    one_line(shown, 1, "PROBLEM: the config cannot be read", f"{config}:", "max_paralel")
    assert "kept-a1" in shown.stdout
    listed = cli(repo, "status", "--json")
    one_line(listed, 1, "PROBLEM: the config cannot be read", "max_paralel")
    assert [row["id"] for row in json.loads(listed.stdout)] == ["kept-a1"]
    config.write_text("[lanes\n")  # not TOML at all
    one_line(cli(repo, "status"), 1, "PROBLEM: the config cannot be read", str(config))


# --- completion by state ------------------------------------------------------------------------------------

LANES = {"ready-a1": ("ready", ""), "run-a1": ("running", ""), "asks-a1": ("waiting", "a question is open"),
         "parked-a1": ("waiting", "parked until 12:00: out of budget"), "done-a1": ("accepted", ""),
         "gone-a1": ("abandoned", ""), "lost-a1": ("lost", ""), "gates-a1": ("checking", "")}


@pytest.fixture()
def lanes_in_states(repo: Path, tmp_path: Path) -> tuple[Path, dict[str, str]]:
    for lane, (state, reason) in LANES.items():
        state_lane(repo, lane, state, reason)
    broken = repo / ".lanes" / "state" / "lanes" / "broken-a1"
    broken.mkdir()
    (broken / "lane.json").write_text("{not json")
    return repo, env_with_lanes_tui(tmp_path)


def test_complete_offers_each_command_only_the_lanes_it_can_act_on(
        lanes_in_states: tuple[Path, dict[str, str]]) -> None:
    repo, _ = lanes_in_states

    def offered(command: str) -> set[str]:
        return set(cli(repo, "__complete", "lanes", command, check=True).stdout.split())

    every = set(LANES) | {"broken-a1"}
    assert offered("status") == offered("peek") == offered("wait") == every
    assert offered("accept") == offered("check") == {"ready-a1", "lost-a1", "broken-a1"}
    assert offered("review") == offered("verify") == {"ready-a1", "lost-a1", "broken-a1"}
    assert offered("recover") == {"lost-a1", "parked-a1", "broken-a1"}
    assert offered("abandon") == every - {"done-a1", "gone-a1"}
    assert offered("diff") == every - {"gone-a1"}
    assert offered("stop") == {"run-a1", "asks-a1", "parked-a1", "gates-a1", "broken-a1"}
    assert offered("send") == offered("attach") == {"run-a1", "asks-a1", "parked-a1", "broken-a1"}
    assert set(cli(repo, "__complete", "lanes", check=True).stdout.split()) == every  # an old script's call


def test_bash_completes_only_acceptable_lanes_with_repo_after_the_command(
        lanes_in_states: tuple[Path, dict[str, str]], tmp_path: Path) -> None:
    repo, env = lanes_in_states
    script = tmp_path / "lanes-tui.bash"
    script.write_text(cli(repo, "completion", "bash", check=True).stdout)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()

    def complete(cwd: Path, *words: str) -> list[str]:
        return sorted(bash_complete(script, cwd, env, *words))

    assert complete(repo, "lanes-tui", "accept", "") == ["broken-a1", "lost-a1", "ready-a1"]
    assert complete(repo, "lanes-tui", "send", "r") == ["run-a1"]
    assert complete(repo, "lanes-tui", "status", "r") == ["ready-a1", "run-a1"]
    assert complete(elsewhere, "lanes-tui", "accept", "--repo", str(repo), "") == ["broken-a1", "lost-a1", "ready-a1"]
    assert complete(elsewhere, "lanes-tui", "--repo", str(repo), "recover", "") == ["broken-a1", "lost-a1",
                                                                                    "parked-a1"]
    assert "--repo" in complete(repo, "lanes-tui", "status", "--r")  # offered after the command too


def test_completion_states_are_the_engines_own() -> None:
    """The lister keeps its own copy of the states (it must not load the engine): held equal here."""
    from lanes_tui.app.cli.shell import LANE_STATES, PARKED_PREFIX
    from lanes_tui.engine import LIVE_STATES, RECOVERABLE, STATES
    from lanes_tui.engine.decisions.accept_plan import OVERRIDABLE
    from lanes_tui.engine.decisions.check import CHECKABLE
    from lanes_tui.engine.lanes.parking import PARKED_PREFIX as ENGINE_PARKED

    assert LANE_STATES["accept"] == OVERRIDABLE | {"ready"}
    assert LANE_STATES["check"] == CHECKABLE
    assert LANE_STATES["recover"] == RECOVERABLE and PARKED_PREFIX == ENGINE_PARKED
    assert LANE_STATES["stop"] == LIVE_STATES | {"checking", "reviewing"}
    assert LANE_STATES["abandon"] == set(STATES) - {"accepted", "abandoned"}
    assert LANE_STATES["diff"] == set(STATES) - {"abandoned"}
    # review and verify refuse the settled-for-good and the still-busy (decisions.review.run/verify).
    busy = LIVE_STATES | {"checking", "reviewing"}
    assert LANE_STATES["review"] == LANE_STATES["verify"] == set(STATES) - busy - {"accepted", "abandoned",
                                                                                     "unreachable"}
    assert set().union(*LANE_STATES.values()) <= set(STATES)


@pytest.mark.skipif(shutil.which("zsh") is None, reason="zsh is not installed")
def test_zsh_completes_only_acceptable_lanes(lanes_in_states: tuple[Path, dict[str, str]], tmp_path: Path) -> None:
    repo, env = lanes_in_states
    script = tmp_path / "lanes-tui.zsh"
    script.write_text(cli(repo, "completion", "zsh", check=True).stdout)

    def complete(*words: str) -> list[str]:
        return sorted(zsh_complete(script, tmp_path, env, *words))

    assert complete("lanes-tui", "accept", "--repo", str(repo), "") == ["broken-a1", "lost-a1", "ready-a1"]
    assert complete("lanes-tui", "--repo", str(repo), "stop", "") == ["asks-a1", "broken-a1", "gates-a1",
                                                                       "parked-a1", "run-a1"]


@pytest.mark.skipif(shutil.which("fish") is None, reason="fish is not installed")
def test_fish_completes_only_acceptable_lanes(lanes_in_states: tuple[Path, dict[str, str]], tmp_path: Path) -> None:
    repo, env = lanes_in_states
    script = tmp_path / "lanes-tui.fish"
    script.write_text(cli(repo, "completion", "fish", check=True).stdout)

    def complete(line: str) -> list[str]:
        return sorted(fish_complete(script, tmp_path, env, line))

    assert complete(f"lanes-tui accept --repo {repo} ") == ["broken-a1", "lost-a1", "ready-a1"]
    assert complete(f"lanes-tui --repo {repo} send ") == ["asks-a1", "broken-a1", "parked-a1", "run-a1"]
