"""Resuming the provider's own session in a relaunched lane (docs/lanes.md, "Resuming a session").

A relaunch (`recover --relaunch`, `answer --relaunch`, a plan's next attempt) writes into the new
lane which attempt it follows and that attempt's provider and session (`LaneRecord.resume_*`). When
this supervisor runs that provider, it continues the conversation instead of starting over: the CLI's
resume arguments (`config.cli_facts.resume_fact`) go into its argv, and the agent gets only the new
message — where it works now and the findings (the lead's answer, the failed gates, the stall) —
not the whole task again, which its conversation already holds. Every other run of the chain
(another provider, a fallback) starts fresh with the full prompt.

The new attempt works in a new worktree cut from the target, never in the old one: an attempt is a
lane, and a lane's worktree is derived from its id (`git.lane_paths`). The conversation remembers
changes this worktree does not have and paths in the old one, so the message says so plainly and
names the old worktree as reading material only. A CLI that cannot reach the session from a new
folder (gemini keeps sessions per project folder), that has none (sim), or whose recorded id is not
an id, starts fresh, and the lane's events say why; a resumed run that prints that the CLI could not
find its session (`ResumeFact.missing`) is run once more, fresh, instead of failing the lane.
"""

from __future__ import annotations

import os
import re
import stat
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from lanes_tui.engine.config.cli_facts import ResumeFact, resume_fact
from lanes_tui.engine.config.providers import compile_pattern
from lanes_tui.engine.config.settings import Config, ProviderConfig
from lanes_tui.engine.core.atomic import private_opener
from lanes_tui.engine.core.errors import LanesError
from lanes_tui.engine.git.lane_paths import locate_lane, working_tree
from lanes_tui.engine.lanes.agent_run import RunOutcome
from lanes_tui.engine.state.model import LaneRecord
from lanes_tui.engine.state.store import LaneStore

__all__ = ["Resumer", "Turn", "resume_message", "retry_message"]

#: A session id goes into an argv: letters, digits and `._:-`, never a leading `-` (it would be a flag).
SESSION_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._:-]{0,199}$")
#: The heading `decisions.recover` (and the plan scheduler) put before an attempt's findings.
FINDINGS_HEADING = "\n\n## Findings from attempt "
#: A chat history file larger than this is not copied (aider would send it all to the model).
MAX_HISTORY_BYTES = 8 * 1024 * 1024
#: How much of a resumed run's output is searched for "no such session".
MISSING_TAIL_BYTES = 64 * 1024


@dataclass
class Turn:
    """One provider run: the prompt it gets, and the session it resumes (None: a fresh start)."""

    provider: ProviderConfig
    prompt: str
    worktree: Path
    fact: ResumeFact | None = None
    session: str | None = None
    #: Where this run's output starts in output.log (what `Resumer.ended` searches).
    offset: int = 0

    @property
    def header(self) -> str:
        """What output.log's `=== lanes-tui: … starting ===` line adds for a resumed run."""
        return f", resumed session {self.session}" if self.session else ""

    def argv(self, argv: list[str]) -> list[str]:
        """The channel's argv with the CLI's resume arguments, for a resumed run."""
        return self.fact.apply(argv, self.session) if self.fact is not None and self.session else argv


class Resumer:
    """The resume decision of one lane: made at the first run of the recorded provider, said once."""

    def __init__(self, repo: Path, config: Config, store: LaneStore, record: LaneRecord, output: Path) -> None:
        self.repo = repo
        self.config = config
        self.store = store
        self.record = record
        self.output = output
        self.pending = record.resume_from is not None
        self.retry = False
        self.told: set[str] = set()
        #: A retry in the lane (`supervisor.retry`): (provider, its session or None, why it is retried).
        self._again: tuple[str, str | None, str] | None = None

    def again(self, provider: str, session: str | None, reason: str) -> None:
        """The next run of `provider` retries it in the same worktree after `reason` (a rate limit):
        resumed from `session` where its CLI can, else fresh with the task and a note."""
        self._again = (provider, session, reason)

    def turn(self, provider: ProviderConfig, prompt: str, worktree: Path) -> Turn:
        """The next run of `provider`: resumed when this is the relaunch's session and the CLI can."""
        fact = resume_fact(provider)
        fresh = Turn(provider, prompt, worktree, fact, offset=_size(self.output))
        again, self._again = self._again, None
        if again is not None and again[0] == provider.name:
            return self._retried(fresh, again[1], again[2])
        if not self.pending:
            return fresh
        record = self.record
        if record.resume_fresh:
            return self._fresh(fresh, "the lead asked for a fresh session (--fresh)")
        if provider.name != record.resume_provider:
            if provider.name not in self.told:  # a later run of the recorded provider may still resume
                self.told.add(provider.name)
                self._say(False, provider.name, f"session not resumed: {record.resume_from}'s session is "
                          f"{record.resume_provider or 'nobody'}'s, this run is {provider.name}'s; starting fresh")
            return fresh
        session = record.resume_session
        if fact is None:
            return self._fresh(fresh, f"{provider.name} cannot resume")
        if not session:
            return self._fresh(fresh, f"{record.resume_from} recorded no {provider.name} session")
        if not (session == fact.history_file if fact.history_file else SESSION_RE.match(session)):
            return self._fresh(fresh, f"the recorded session id {session[:80]!r} is not one")
        if not fact.across_worktrees:
            return self._fresh(fresh, f"{provider.name} keeps sessions per folder and this attempt runs in a "
                               "new worktree")
        old_worktree = self._old_worktree()
        if fact.history_file:
            problem = _copy_history(old_worktree, worktree, fact.history_file)
            if problem:
                return self._fresh(fresh, problem)
        self.pending = False
        self._say(True, provider.name, f"resumed session {session}", session_id=session)
        message = resume_message(record, worktree, old_worktree)
        return Turn(provider, message, worktree, fact, session, fresh.offset)

    def ended(self, turn: Turn, outcome: RunOutcome, on_session: Callable[[str], None]) -> None:
        """After a run: record a history-file session (aider); a resumed run whose CLI could not find
        its session is marked for one fresh run (`retry_fresh`)."""
        fact = turn.fact
        if fact is not None and fact.history_file:
            path = turn.worktree / fact.history_file
            if path.is_file() and not path.is_symlink():
                on_session(fact.history_file)
        if not turn.session or fact is None or not fact.missing or outcome.classification.result == "OK":
            return
        line = _missing_line(self.output, turn.offset, fact.missing)
        if line is not None:
            self.retry = True
            self._say(False, turn.provider.name, f"session not resumed: {turn.provider.name} could not find "
                      f"session {turn.session} ({line}); starting fresh", session_id=turn.session)

    def _retried(self, fresh: Turn, session: str | None, reason: str) -> Turn:
        """A retry in the lane: its own session continued (the same worktree, so even a CLI that keeps
        sessions per folder finds it), or the whole task again with what happened."""
        fact, name = fresh.fact, fresh.provider.name
        if fact is not None and session and (session == fact.history_file if fact.history_file
                                             else SESSION_RE.match(session)):
            self._say(True, name, f"resumed session {session} after: {reason}", session_id=session)
            return Turn(fresh.provider, retry_message(reason), fresh.worktree, fact, session, fresh.offset)
        fresh.prompt += "\n\n" + retry_message(reason)
        return fresh

    def retry_fresh(self) -> bool:
        """True once after a resumed run whose session the CLI could not find: run it again, fresh."""
        retry, self.retry = self.retry, False
        return retry

    def _fresh(self, fresh: Turn, why: str) -> Turn:
        self.pending = False
        self._say(False, fresh.provider.name, f"session not resumed: {why}; starting fresh")
        return fresh

    def _say(self, resumed: bool, provider: str, message: str, **data: str) -> None:
        self.store.event(self.record.id, "resume", resumed=resumed, provider=provider,
                         from_lane=self.record.resume_from, message=message, **data)

    def _old_worktree(self) -> Path | None:
        """The followed attempt's worktree, derived from its id and witnessed as `git.lane_paths` does."""
        old_id = self.record.resume_from
        if old_id is None:
            return None
        try:
            old = self.store.read(old_id)
            return working_tree(locate_lane(self.repo, old_id, old, default_root=self.config.lanes.worktree_root))
        except LanesError:
            return None


def resume_message(record: LaneRecord, worktree: Path, old_worktree: Path | None) -> str:
    """What a resumed agent is told: where it works now, and the findings of the attempt it follows."""
    cut = record.prompt.find(FINDINGS_HEADING)
    findings = record.prompt[cut:].strip("\n") if cut >= 0 else ""
    if record.raw:
        return findings or "Continue the task."
    lines = [
        f"# Attempt {record.attempt} of this task (lanes-tui)",
        f"The lead relaunched the task as lane {record.id}; this conversation goes on from lane "
        f"{record.resume_from}.",
        f"- Your current directory is a new worktree, {worktree}, cut from {record.target_branch}: "
        "the changes of the earlier attempt are not in it.",
    ]
    if old_worktree is not None:
        lines.append(f"- The earlier attempt's worktree, {old_worktree}, is kept for reference: read it if it "
                     "helps, change nothing there.")
    lines.append("- Work only in this worktree; everything else you were told about working in a lane still holds.")
    return "\n".join(lines) + ("\n\n" + findings if findings else "\n\nContinue the task.") + "\n"


def retry_message(reason: str) -> str:
    """What an agent retried in its lane is told: why it stopped, and that its work is still there."""
    return ("## The provider's API refused the last request\n"
            f"> {reason}\nlanes-tui waited and runs you again in the same worktree: your earlier work is there "
            "(see `git status` and `git diff`). Continue the task from it; do not start over.\n")


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:
        return 0


def _missing_line(output: Path, offset: int, patterns: tuple[str, ...]) -> str | None:
    """The first line of a run's output (from `offset`) that says the CLI found no such session."""
    try:
        with open(output, "rb") as handle:
            end = handle.seek(0, os.SEEK_END)
            handle.seek(max(offset, end - MISSING_TAIL_BYTES))
            text = handle.read().decode("utf-8", "replace")
    except OSError:
        return None
    compiled = [compile_pattern(p) for p in patterns]
    for line in text.splitlines():
        if any(p.search(line) for p in compiled):
            return line.strip()[:200]
    return None


def _copy_history(old_worktree: Path | None, worktree: Path, name: str) -> str | None:
    """Copy the earlier attempt's chat history file into this worktree; the problem, or None."""
    if old_worktree is None:
        return "the earlier attempt's worktree is gone"
    target = worktree / name
    if target.exists():
        return None  # already there (a second run of the attempt): aider reads it as it is
    try:
        fd = os.open(old_worktree / name, os.O_RDONLY | os.O_NOFOLLOW)
        with os.fdopen(fd, "rb") as handle:
            if not stat.S_ISREG(os.fstat(handle.fileno()).st_mode):
                return f"{name} of the earlier attempt is not a regular file"
            data = handle.read(MAX_HISTORY_BYTES + 1)
        if len(data) > MAX_HISTORY_BYTES:
            return f"{name} of the earlier attempt is larger than {MAX_HISTORY_BYTES // (1024 * 1024)} MiB"
        with open(target, "xb", opener=private_opener) as out:
            out.write(data)
    except OSError as exc:
        return f"{name} of the earlier attempt could not be copied ({exc.strerror or exc})"
    return None
