"""A pull request's failed CI as findings a lane can be relaunched with (`lanes-tui ci`).

For each failed check, the failed steps' log is fetched when gh can give it (`gh run view --job JOB
--log-failed` for a GitHub Actions job, the run and job read from the check's link) and its last
`LOG_LINES` lines are kept. Everything goes into `.lanes/state/ci/PR-N.md`, written atomically, and
the lead is shown the command that hands the file to a relaunch: `lanes-tui recover LANE --relaunch
--note-file PATH`, for each lane whose accepted work the pull request carries (accepted into the head
branch since it left the base: the packets' `accepted_sha` between the merge base and the head).

A check from another service (no Actions link), or a log gh cannot fetch, is still listed with its
link and what gh said: the findings never pretend to a log they do not have.
"""

from __future__ import annotations

import asyncio
import re
from dataclasses import dataclass
from pathlib import Path

from lanes_tui.engine.core.ansi import terminal_text
from lanes_tui.engine.core.atomic import PRIVATE_DIR, write_text_atomic
from lanes_tui.engine.core.errors import LanesError
from lanes_tui.engine.decisions.accept_plan import is_ancestor
from lanes_tui.engine.decisions.packet import read_packet
from lanes_tui.engine.decisions.pr_checks import Check, ChecksOutcome, GhUnavailable, PullRequest, run_gh
from lanes_tui.engine.git.commands import run_git
from lanes_tui.engine.git.upstream import upstream_of
from lanes_tui.engine.state.paths import StatePaths
from lanes_tui.engine.state.store import LaneStore

#: The last lines of each failed check's log kept in the findings: the error is nearly always there,
#: and a relaunched agent's prompt must stay small.
LOG_LINES = 80
#: A single log line longer than this is cut (minified output, a progress bar without newlines).
LINE_CHARS = 400
_RUN_LINK = re.compile(r"^https?://([^/\s]+)/([^/\s]+)/([^/\s]+)/actions/runs/(\d+)(?:/(?:job|jobs)/(\d+))?")


@dataclass(frozen=True)
class RunRef:
    """A GitHub Actions run (and job) a check's link points at."""

    repo: str  # HOST/OWNER/REPO, as `gh -R` takes it
    run_id: str
    job_id: str | None


def run_ref(link: str) -> RunRef | None:
    """The run and job in `https://HOST/OWNER/REPO/actions/runs/RUN[/job/JOB]`; None for any other link."""
    found = _RUN_LINK.match(link)
    if found is None:
        return None
    host, owner, name, run_id, job_id = found.groups()
    return RunRef(f"{host}/{owner}/{name}", run_id, job_id)


async def failed_log(repo: Path, check: Check, *, lines: int = LOG_LINES) -> tuple[str, str]:
    """(the last `lines` lines of the check's failed steps, or "", a note on where they came from)."""
    ref = run_ref(check.link)
    if ref is None:
        return "", "no log: not a GitHub Actions job; open its link"
    target = ["--job", ref.job_id] if ref.job_id else [ref.run_id]
    try:
        answer = await run_gh(repo, "run", "view", *target, "--log-failed", "-R", ref.repo)
    except GhUnavailable:
        raise
    except LanesError as exc:
        return "", f"no log: {exc.what}"
    if answer.returncode != 0:
        return "", f"no log: gh run view failed: {answer.first_error()}"
    text = [line[:LINE_CHARS] for line in terminal_text(answer.stdout).splitlines() if line.strip()]
    if not text:
        return "", "no log: gh printed no failed step"
    shown = text[-lines:]
    cut = f"the last {len(shown)} of {len(text)} lines" if len(text) > len(shown) else f"{len(text)} lines"
    return "\n".join(shown), f"the failed steps' log ({cut}, `gh run view {' '.join(target)} --log-failed`)"


def _commit(repo: Path, ref: str) -> str | None:
    if not ref or ref.startswith("-"):
        return None
    proc = run_git(repo, "rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}", check=False)
    sha = proc.stdout.decode().strip()
    return sha if proc.returncode == 0 and sha else None


def lanes_carried(repo: Path, pr: PullRequest) -> list[str]:
    """The accepted lanes whose merged commit is in the PR's head and not in its base (oldest first);
    [] when the head is not in this repository. Without the base here, every accepted lane in the head."""
    head = _commit(repo, pr.head_sha) or (_commit(repo, f"refs/heads/{pr.head}") if pr.head else None)
    if head is None:
        return []
    try:
        upstream = upstream_of(repo, pr.head) if pr.head and not pr.head.startswith("-") else None
    except LanesError:
        upstream = None
    remote = upstream.remote if upstream else "origin"
    base = None
    if pr.base:
        base = _commit(repo, f"refs/remotes/{remote}/{pr.base}") or _commit(repo, f"refs/heads/{pr.base}")
    fork = None
    if base is not None:
        proc = run_git(repo, "merge-base", head, base, check=False)
        fork = proc.stdout.decode().strip() if proc.returncode == 0 else None
    store = LaneStore(StatePaths(repo))
    carried: list[str] = []
    for record in store.all():
        if record.state != "accepted":
            continue
        packet = read_packet(store.lane_paths(record.id)) or {}
        merged = packet.get("accepted_sha")
        if not isinstance(merged, str) or _commit(repo, merged) is None:
            continue
        if is_ancestor(repo, merged, head) and not (fork and is_ancestor(repo, merged, fork)):
            carried.append(record.id)
    return carried


def findings_path(repo: Path, number: int) -> Path:
    return StatePaths(repo).state / "ci" / f"PR-{number}.md"


@dataclass(frozen=True)
class CiFindings:
    """The findings file written for a failed CI, the lanes it is about, and the commands to use it."""

    path: Path
    lanes: list[str]
    commands: list[str]


def _fenced(text: str) -> str:
    """`text` in a code fence longer than any run of backticks inside it (a log may hold ```)."""
    longest = max((len(run) for run in re.findall(r"`+", text)), default=0)
    fence = "`" * max(3, longest + 1)
    return f"{fence}text\n{text}\n{fence}"


async def write_findings(repo: Path, pr: PullRequest, outcome: ChecksOutcome, *,
                         lines: int = LOG_LINES) -> CiFindings:
    """Fetch the failed checks' logs, write `.lanes/state/ci/PR-N.md`, and say how to relaunch with it."""
    failed = outcome.failed
    logs = await asyncio.gather(*(failed_log(repo, check, lines=lines) for check in failed))
    lanes = lanes_carried(repo, pr)
    parts = [f"# CI failed on pull request #{pr.number} ({pr.head} into {pr.base})", "",
             f"{pr.url}, head {pr.head_sha[:12] or '?'}. These checks failed; make them pass without weakening "
             "them (run the same commands locally first).", ""]
    for check, (log, note) in zip(failed, logs, strict=True):
        parts += [f"## {check.label}: {check.bucket} ({check.state or '?'})", ""]
        parts += [line for line in (check.link, check.description) if line]
        parts += ["", f"{note}:" if log else note, ""]
        if log:
            parts += [_fenced(log), ""]
    path = findings_path(repo, pr.number)
    path.parent.mkdir(mode=PRIVATE_DIR, parents=True, exist_ok=True)
    write_text_atomic(path, "\n".join(parts).rstrip() + "\n")
    commands = [f"lanes-tui recover {lane} --relaunch --note-file {path}" for lane in lanes]
    if not commands:
        commands = [f"lanes-tui recover LANE --relaunch --note-file {path}",
                    f"lanes-tui run --prompt-file {path}"]
    return CiFindings(path, lanes, commands)
