"""A fake GitHub CLI: answers the `gh` calls lanes-tui makes, from a scenario file.

A test copies this file into a temp `bin/gh` (with this interpreter in its first line) and puts that
folder first on PATH. `FAKE_GH_DIR` names a folder with `scenario.json`:

    {"auth": "ok" | "logged-out",
     "create": "https://github.com/o/r/pull/7",            # what `gh pr create` prints
     "pr": {"number": 7, "url": …, "headRefName": …, …},   # what `gh pr view … --json` prints
     "polls": [[CHECK, …], null, {"error": "HTTP 502"}, …],
     "logs": {"JOB_OR_RUN_ID": "text"},                    # `gh run view --job ID --log-failed`
     "hang": false}                                         # `gh pr checks` never answers

Each `gh pr checks` call answers the next poll (the last one repeats), exiting as gh does: 8 while a
check is pending, 1 when one failed, 0 otherwise; `null` is gh's "no checks reported". Every call is
appended to `calls.jsonl` with its argv and the gh variables it saw, so a test can check the argv
lists and that gh ran with the lead's environment.
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path


def main(argv: list[str]) -> int:
    folder = Path(os.environ["FAKE_GH_DIR"])
    scenario = json.loads((folder / "scenario.json").read_text())
    seen = {k: os.environ.get(k) for k in ("GH_TOKEN", "GH_PROMPT_DISABLED", "NO_COLOR")}
    with (folder / "calls.jsonl").open("a") as calls:
        calls.write(json.dumps({"argv": argv, "env": seen, "pgid_is_pid": os.getpgid(0) == os.getpid()}) + "\n")
    if scenario.get("auth", "ok") != "ok":
        print("To get started with GitHub CLI, please run:  gh auth login", file=sys.stderr)
        return 4
    words = argv[:2]
    if words == ["auth", "status"]:
        return 0
    if words == ["pr", "create"]:
        print(scenario["create"])
        return 0
    if words == ["pr", "view"]:
        if "pr" not in scenario:
            print(f"no pull requests found for branch \"{argv[2]}\"", file=sys.stderr)
            return 1
        print(json.dumps(scenario["pr"]))
        return 0
    if words == ["pr", "checks"]:
        return _checks(folder, scenario)
    if words == ["run", "view"]:
        key = argv[argv.index("--job") + 1] if "--job" in argv else argv[2]
        if key not in scenario.get("logs", {}):
            print(f"failed to get run log: HTTP 404 for {key}", file=sys.stderr)
            return 1
        sys.stdout.write(scenario["logs"][key])
        return 0
    print(f"fake gh: unexpected call {argv}", file=sys.stderr)
    return 97


def _checks(folder: Path, scenario: dict[str, object]) -> int:
    if scenario.get("hang"):
        (folder / "hanging.pid").write_text(str(os.getpid()))
        time.sleep(3600)  # the fake's own stand-in for a network that never answers
    counter = folder / "polls.count"
    done = int(counter.read_text()) if counter.exists() else 0
    counter.write_text(str(done + 1))
    polls = scenario["polls"]
    assert isinstance(polls, list)
    poll = polls[min(done, len(polls) - 1)]
    if poll is None:
        print("no checks reported on the 'programme' branch", file=sys.stderr)
        return 1
    if isinstance(poll, dict):
        print(poll["error"], file=sys.stderr)
        return 1
    print(json.dumps(poll))
    buckets = {check["bucket"] for check in poll}
    return 1 if buckets & {"fail", "cancel"} else 8 if "pending" in buckets else 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
