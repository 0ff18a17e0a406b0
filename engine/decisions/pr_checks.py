"""Following a pull request's CI with GitHub's `gh` (`lanes-tui ci`, `finish --pr --watch`).

`finish --pr` opens the pull request and used to stop there: nobody saw its checks fail. This module
asks `gh pr checks PR --json …` every `interval_s` until every check has finished or `timeout_s`
has passed, and reports each check's change of state as one line. Time comes from an injected
`Clock`, so the loop is tested with a fake clock and a fake `gh`, never by waiting.

Every `gh` call is an argv list in its own session (`procs.process.ProcessHandle`), with a deadline,
and is stopped by escalation on its process group when the deadline passes or the follower is
cancelled (Ctrl-C): nothing is left running. It runs with the lead's environment (`GH_TOKEN`,
`GH_HOST`, gh's own config), as the lead's command — `ci` is never run in a lane's shell.
`ci_findings` turns the failed checks into a findings file a relaunched lane can read.
"""

from __future__ import annotations

import asyncio
import json
import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from lanes_tui.engine.core.clock import Clock
from lanes_tui.engine.core.errors import LanesError
from lanes_tui.engine.procs.process import ProcessHandle, ProcessRequest, StopDeadlines

#: One `gh` call's deadline: a hung network call must not hold the follower past its own timeout.
GH_CALL_TIMEOUT_S = 60.0
#: How many `gh pr checks` failures in a row (a network blip, GitHub's 502) are ridden out.
MAX_GH_FAILURES = 3
#: A pull request with no check at all after this long has no CI to follow (or none for PRs).
NO_CHECKS_S = 180.0
#: Every JSON field `gh pr checks --json` documents (cli.github.com/manual/gh_pr_checks).
CHECK_FIELDS = "bucket,completedAt,description,event,link,name,startedAt,state,workflow"
PR_FIELDS = "number,url,headRefName,baseRefName,headRefOid,state"
_STOP = StopDeadlines(eof=0.0, sigint=1.0, sigterm=2.0, sigkill=2.0)
_FAILED_BUCKETS = frozenset({"fail", "cancel"})
#: gh's `state` for the rare check without a `bucket` (an older gh): the bucket gh would give it.
_STATE_BUCKETS = {"SUCCESS": "pass", "FAILURE": "fail", "ERROR": "fail", "TIMED_OUT": "fail",
                  "ACTION_REQUIRED": "fail", "STARTUP_FAILURE": "fail", "CANCELLED": "cancel",
                  "SKIPPED": "skipping", "NEUTRAL": "skipping", "STALE": "skipping"}


class GhUnavailable(LanesError):
    """gh is missing or not logged in: asking again will not help, the lead has to act."""


def gh_missing() -> GhUnavailable:
    return GhUnavailable("`gh` is not installed",
                      "install GitHub CLI (https://cli.github.com) and run `gh auth login`, "
                      "or follow the PR's checks on the web")


def gh_logged_out() -> GhUnavailable:
    return GhUnavailable("`gh` is not logged in",
                      "run `gh auth login` (or set GH_TOKEN), or follow the PR's checks on the web")


@dataclass(frozen=True)
class GhAnswer:
    """What one `gh` call said."""

    returncode: int
    stdout: str
    stderr: str

    def first_error(self) -> str:
        return next((line.strip() for line in self.stderr.splitlines() if line.strip()), "(no message from gh)")

    def logged_out(self) -> bool:
        """gh exits 4 when a command needs a login, and tells the user to run `gh auth login`."""
        return self.returncode == 4 or "gh auth login" in self.stderr


def gh_env() -> dict[str, str]:
    """The lead's environment (gh's token and host), with prompts, colour and update checks off."""
    return {**os.environ, "GH_PROMPT_DISABLED": "1", "NO_COLOR": "1", "GH_NO_UPDATE_NOTIFIER": "1",
            "GH_SPINNER_DISABLED": "1"}


async def run_gh(repo: Path, *args: str, timeout_s: float = GH_CALL_TIMEOUT_S) -> GhAnswer:
    """`gh ARGS…` in `repo`, in its own session; a missing gh, a login gh lacks or a deadline passed is
    a LanesError. Cancelled (Ctrl-C), it stops gh's whole process group before it lets go."""
    request = ProcessRequest(["gh", *args], repo, gh_env(), stdin_pipe=False, name="gh")
    try:
        handle = await ProcessHandle.start(request)
    except FileNotFoundError as exc:
        raise gh_missing() from exc
    try:
        out, err = await asyncio.wait_for(handle.proc.communicate(), timeout_s)
    except TimeoutError:
        await handle.stop(_STOP)
        raise LanesError(f"gh {' '.join(args[:2])} gave no answer within {timeout_s:g}s",
                         "check the network and `gh auth status`, then try again") from None
    except asyncio.CancelledError:
        await handle.stop(_STOP)
        raise
    code = handle.proc.returncode
    answer = GhAnswer(-1 if code is None else code, out.decode("utf-8", "replace"), err.decode("utf-8", "replace"))
    if answer.logged_out():
        raise gh_logged_out()
    return answer


@dataclass(frozen=True)
class PullRequest:
    """The pull request being followed, as `gh pr view` describes it."""

    number: int
    url: str
    head: str  # the head branch
    base: str  # the branch it merges into
    head_sha: str
    state: str = "OPEN"


def refuse_pr_option(which: str) -> str:
    """A pull request named by number, URL or branch; never something gh would read as an option."""
    if not which or which.startswith("-") or any(not ch.isprintable() for ch in which):
        raise LanesError(f"invalid pull request {which!r}", "name it by number, URL or branch (`lanes-tui ci 7`)")
    return which


async def find_pr(repo: Path, which: str) -> PullRequest:
    """The pull request `which` names (number, URL or head branch), from `gh pr view`."""
    answer = await run_gh(repo, "pr", "view", refuse_pr_option(which), "--json", PR_FIELDS)
    if answer.returncode != 0:
        if "no pull requests found" in answer.stderr.lower():
            raise LanesError(f"no pull request for {which}",
                             "open one with `lanes-tui finish --pr`, or name it: `lanes-tui ci NUMBER`")
        raise LanesError(f"gh pr view {which} failed: {answer.first_error()}",
                         "check the pull request's number and `gh auth status`")
    try:
        data = json.loads(answer.stdout)
        return PullRequest(int(data["number"]), str(data.get("url") or ""), str(data.get("headRefName") or ""),
                           str(data.get("baseRefName") or ""), str(data.get("headRefOid") or ""),
                           str(data.get("state") or "OPEN"))
    except (ValueError, KeyError, TypeError) as exc:
        raise LanesError(f"gh pr view {which} printed something that is not a pull request",
                         "update gh (`gh --version`), or follow the PR's checks on the web") from exc


@dataclass(frozen=True)
class Check:
    """One check of the pull request: a CI job, or a status another service posted."""

    name: str
    workflow: str = ""
    state: str = ""
    bucket: str = "pending"  # pass | fail | pending | skipping | cancel (gh's categories)
    link: str = ""
    description: str = ""
    event: str = ""

    @property
    def key(self) -> tuple[str, str, str]:
        """A job runs once per event (push and pull_request) in each workflow: all three tell it apart."""
        return (self.workflow, self.name, self.event)

    @property
    def label(self) -> str:
        return f"{self.workflow} / {self.name}" if self.workflow and self.workflow != self.name else self.name

    @property
    def failed(self) -> bool:
        return self.bucket in _FAILED_BUCKETS

    @classmethod
    def from_gh(cls, item: dict[str, Any]) -> Check:
        text = {key: value if isinstance(value, str) else "" for key, value in item.items()}
        state = text.get("state", "").upper()
        bucket = text.get("bucket", "").lower() or _STATE_BUCKETS.get(state, "pending")
        return cls(name=text.get("name", "") or "(unnamed check)", workflow=text.get("workflow", ""), state=state,
                   bucket=bucket, link=text.get("link", ""), description=text.get("description", ""),
                   event=text.get("event", ""))


async def read_checks(repo: Path, pr: str) -> list[Check]:
    """The checks now; [] when GitHub reports none yet. gh exits 8 while checks are pending and 1
    when one failed, with the same JSON on stdout, so the JSON decides, not the exit code."""
    answer = await run_gh(repo, "pr", "checks", pr, "--json", CHECK_FIELDS)
    if answer.returncode in (0, 1, 8) and answer.stdout.strip():
        try:
            items = json.loads(answer.stdout)
        except ValueError:
            items = None
        if isinstance(items, list):
            return [Check.from_gh(item) for item in items if isinstance(item, dict)]
    if "no checks reported" in answer.stderr:
        return []
    raise LanesError(f"gh pr checks {pr} failed: {answer.first_error()}",
                     "check the network and `gh auth status`, or follow the PR's checks on the web")


@dataclass(frozen=True)
class ChecksOutcome:
    """How following ended: `passed`, `failed`, `timeout` (still running), or `none` (no check came)."""

    status: str
    checks: tuple[Check, ...]
    reason: str

    @property
    def failed(self) -> list[Check]:
        return [c for c in self.checks if c.failed]

    @property
    def pending(self) -> list[Check]:
        return [c for c in self.checks if c.bucket == "pending"]

    @property
    def code(self) -> int:
        """The command's exit code: 0 every check passed, 1 one failed, 2 no answer (docs/cli.md)."""
        return {"passed": 0, "failed": 1}.get(self.status, 2)

    def to_json(self) -> dict[str, Any]:
        return {"status": self.status, "reason": self.reason,
                "checks": [{"name": c.name, "workflow": c.workflow, "state": c.state, "bucket": c.bucket,
                            "link": c.link} for c in self.checks]}


def _clock_text(seconds: float) -> str:
    whole = max(0, int(seconds))
    return f"{whole // 60:02d}:{whole % 60:02d}"


def _names(checks: list[Check], limit: int = 5) -> str:
    names = [c.label for c in checks[:limit]]
    return ", ".join(names) + (f" and {len(checks) - limit} more" if len(checks) > limit else "")


async def follow_checks(repo: Path, pr: PullRequest, *, clock: Clock, on_line: Callable[[str], None],
                        interval_s: float = 15.0, timeout_s: float = 3600.0,
                        no_checks_s: float = NO_CHECKS_S) -> ChecksOutcome:
    """Ask for the checks until all have finished or `timeout_s` passed; each change of a check's
    state is one line through `on_line` (`MM:SS  bucket    workflow / job (STATE)`)."""
    start = clock.monotonic()
    seen: dict[tuple[str, str, str], tuple[str, str]] = {}
    failures = 0
    checks: list[Check] = []
    while True:
        now = clock.monotonic()
        try:
            checks = await read_checks(repo, str(pr.number))
            failures = 0
        except LanesError as exc:
            if isinstance(exc, GhUnavailable) or failures + 1 >= MAX_GH_FAILURES:
                raise
            failures += 1
            on_line(f"{_clock_text(now - start)}  gh failed ({failures}/{MAX_GH_FAILURES}), asking again: {exc.what}")
        for check in checks:
            if seen.get(check.key) != (check.bucket, check.state):
                seen[check.key] = (check.bucket, check.state)
                tail = f"  {check.link}" if check.failed and check.link else ""
                on_line(f"{_clock_text(now - start)}  {check.bucket:<8}  {check.label} ({check.state or '?'}){tail}")
        outcome = _settled(pr, checks, now - start, no_checks_s)
        if outcome is not None:
            return outcome
        left = start + timeout_s - clock.monotonic()
        if left <= 0:
            pending = [c for c in checks if c.bucket == "pending"]
            return ChecksOutcome("timeout", tuple(checks), (
                f"CI of PR #{pr.number} still running after {_clock_text(timeout_s)} (--timeout): "
                f"{len(pending)} pending ({_names(pending) or 'no check reported yet'}); "
                f"follow it again: lanes-tui ci {pr.number}"))
        await clock.sleep(min(interval_s, left))


def _settled(pr: PullRequest, checks: list[Check], elapsed: float, no_checks_s: float) -> ChecksOutcome | None:
    if not checks:
        if elapsed < no_checks_s:
            return None
        return ChecksOutcome("none", (), f"no checks reported on PR #{pr.number} after {_clock_text(elapsed)}: "
                             "the repository may run no CI on pull requests; look at the PR on the web")
    if any(c.bucket == "pending" for c in checks):
        return None
    failed = [c for c in checks if c.failed]
    if failed:
        return ChecksOutcome("failed", tuple(checks),
                             f"CI failed on PR #{pr.number}: {len(failed)} of {len(checks)} checks ({_names(failed)})")
    skipped = sum(1 for c in checks if c.bucket == "skipping")
    count = f"{len(checks)} check" + ("" if len(checks) == 1 else "s")
    return ChecksOutcome("passed", tuple(checks), f"CI passed on PR #{pr.number}: {count}"
                         + (f" ({skipped} skipped)" if skipped else ""))
