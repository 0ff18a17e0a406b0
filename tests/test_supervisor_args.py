"""The supervisor's three arguments, parsed by hand (no argparse in every lane's supervisor, issue 15)."""

from __future__ import annotations

from pathlib import Path

import pytest

from lanes_tui.engine.supervisor.entry import main, parse_args


@pytest.mark.parametrize(("argv", "expected"), [
    (["--repo", "/r", "--lane", "fix-a1", "--detach"], (Path("/r"), "fix-a1", True)),
    (["--lane=fix-a1", "--repo=/r"], (Path("/r"), "fix-a1", False)),
    (["--repo", "/r", "--lane", "a", "--lane", "b"], (Path("/r"), "b", False)),  # the last one wins
])
def test_the_launchers_arguments_are_read_in_any_order(argv: list[str], expected: tuple[Path, str, bool]) -> None:
    assert parse_args(argv) == expected


@pytest.mark.parametrize(("argv", "error"), [
    ([], "missing --repo and --lane"),
    (["--repo", "/r"], "missing --lane"),
    (["--repo", "/r", "--lane="], "missing --lane"),
    (["--repo", "/r", "--lane"], "--lane needs a value"),
    (["--repo", "/r", "--lane", "x", "--detached"], "unknown argument '--detached'"),
    (["/r"], "unknown argument '/r'"),
])
def test_bad_arguments_name_what_is_wrong(argv: list[str], error: str) -> None:
    assert parse_args(argv) == error


def test_main_prints_usage_and_the_error_and_exits_2(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--repo", "/r"]) == 2
    err = capsys.readouterr().err
    assert err == ("usage: lanes-tui-supervisor --repo REPO --lane LANE [--detach]\n"
                   "lanes-tui-supervisor: error: missing --lane\n")
