"""`run --scope`: a lane started by hand owns files too (status shows them, bad paths are one line)."""

from __future__ import annotations

from pathlib import Path

from tests.helpers import cli, run_lane, status, wait_state, write_config


def test_run_scope_is_kept_and_shown_and_a_bad_path_is_refused(repo: Path) -> None:
    write_config(repo)
    lane = run_lane(repo, "say hi", lane_id="scoped", extra=("--scope", "src/", "--scope", "README.md"))
    wait_state(repo, lane)
    row = status(repo, lane)
    assert row["scope"] == ["src/", "README.md"] and row["plan"] is None and row["ticket"] is None
    for bad, words in (("../x.py", "escapes the repository"), ("src/*.py", "contains the glob character"),
                       (".git/", "is protected")):
        refused = cli(repo, "run", "--prompt", "say hi", "--scope", bad)
        assert refused.returncode == 2 and f"--scope: scope path {bad!r} {words}" in refused.stderr, refused.stderr
        assert "Traceback" not in refused.stderr
