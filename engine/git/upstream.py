"""The target branch's upstream: a capped fetch before lanes are cut and accepts rebase, and the push.

The target is the lead's local branch (`programme`); a fetch only moves `refs/remotes/<remote>/…`,
never the local branch, so lanes keep starting from what the lead has. What the fetch adds is
knowledge: a local branch behind its upstream is said out loud (an accept into it would make the
later push fail). The fetch is capped at a few seconds and its failure is never fatal: offline, the
last fetched state is used and the notice says so. A branch with no upstream fetches nothing.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from lanes_tui.engine.core.errors import LanesError
from lanes_tui.engine.git.commands import first_line, git_out, refuse_option, run_git, run_git_capped

#: How long a fetch of the base may take before the last fetched state is used (`LANES_FETCH_TIMEOUT_S`).
FETCH_TIMEOUT_S = 5.0
#: How long `finish`'s push may take (`LANES_PUSH_TIMEOUT_S`).
PUSH_TIMEOUT_S = 600.0  # a pre-push hook (`init --hooks`) runs the gates inside it


@dataclass(frozen=True)
class Upstream:
    """Where a local branch pushes and pulls: `branch.<b>.remote` and `branch.<b>.merge`."""

    branch: str
    remote: str
    remote_branch: str  # the branch's name on the remote (`merge` without refs/heads/)

    @property
    def name(self) -> str:
        return f"{self.remote}/{self.remote_branch}"


@dataclass(frozen=True)
class FetchResult:
    upstream: Upstream | None
    fetched: bool
    #: Lines for the lead: why the fetch did not happen, or that the branch is behind its upstream.
    notices: tuple[str, ...] = ()


def _seconds(env_name: str, default: float) -> float:
    try:
        value = float(os.environ.get(env_name, ""))
    except ValueError:
        return default
    return value if 0 < value < 3600 else default


def upstream_of(repo: Path, branch: str) -> Upstream | None:
    """The branch's configured upstream, or None (no upstream, or a local one: `remote = .`)."""
    refuse_option(branch, "branch")
    remote = _config(repo, f"branch.{branch}.remote")
    merge = _config(repo, f"branch.{branch}.merge")
    if not remote or not merge or remote == "." or not merge.startswith("refs/heads/"):
        return None
    return Upstream(branch, remote, merge.removeprefix("refs/heads/"))


def _config(repo: Path, key: str) -> str:
    proc = run_git(repo, "config", "--get", key, check=False)
    return os.fsdecode(proc.stdout).strip() if proc.returncode == 0 else ""


def fetch_base(repo: Path, branch: str) -> FetchResult:
    """Fetch the branch's upstream, capped; never raises for a remote that is offline or slow."""
    upstream = upstream_of(repo, branch)
    if upstream is None:
        return FetchResult(None, False)
    timeout = _seconds("LANES_FETCH_TIMEOUT_S", FETCH_TIMEOUT_S)
    notices: list[str] = []
    fetched = False
    try:
        proc = run_git_capped(repo, "fetch", "--quiet", "--no-tags", "--", upstream.remote,
                              f"refs/heads/{upstream.remote_branch}", timeout_s=timeout)
        reason = "" if proc.returncode == 0 else first_line(proc.stderr)
    except LanesError as exc:
        reason = exc.what
    if reason:
        notices.append(f"could not fetch {upstream.name} ({reason}); using the last fetched state")
    else:
        fetched = True
    behind = behind_upstream(repo, upstream)
    if behind:
        notices.append(behind)
    return FetchResult(upstream, fetched, tuple(notices))


def behind_upstream(repo: Path, upstream: Upstream) -> str | None:
    """A warning when the local branch lacks commits its upstream has (as last fetched), else None."""
    tracking = f"refs/remotes/{upstream.remote}/{upstream.remote_branch}"
    proc = run_git(repo, "rev-list", "--count", f"refs/heads/{upstream.branch}..{tracking}", "--", check=False)
    count = int(os.fsdecode(proc.stdout).strip() or "0") if proc.returncode == 0 else 0
    if not count:
        return None
    return (f"{upstream.branch} is {count} commit{'' if count == 1 else 's'} behind {upstream.name}: merge or "
            f"rebase it (`git pull` in your checkout) or pushing it will fail")


def target_warning(repo: Path, branch: str) -> str | None:
    """`behind_upstream` for a branch by name, from the last fetch (no network): for the accept plan."""
    try:
        upstream = upstream_of(repo, branch)
    except LanesError:
        return None
    return behind_upstream(repo, upstream) if upstream is not None else None


@dataclass(frozen=True)
class PushResult:
    branch: str
    upstream: Upstream | None
    status: str  # pushed | failed | skipped (no upstream, or a protected branch)
    detail: str  # git's first stderr line on failure; why nothing was pushed when skipped

    @property
    def ok(self) -> bool:
        return self.status != "failed"

    @property
    def reason(self) -> str:
        """What became of the push, in words (`finish --json`'s `push_reason`)."""
        if self.status == "pushed":
            return f"pushed {self.branch} to {self.upstream.name if self.upstream else '?'}"
        return self.detail

    def line(self) -> str:
        if self.status == "skipped":
            return f"NOT-PUSHED: {self.detail}"
        if self.status == "pushed":
            return f"PUSHED {self.branch} -> {self.upstream.name if self.upstream else '?'}"
        return f"PUSH-FAILED: {self.detail}"


def push_branch(repo: Path, branch: str, *, protected: frozenset[str] | set[str] = frozenset(),
                hooks: str | None = None) -> PushResult:
    """Push the local branch to its upstream (never forced: a rejected push is reported, not overridden).

    A protected branch (`lanes.protected_branches`, `main` by default) is not pushed: lanes never merge
    into it, so what it holds is the lead's own to publish. No hook runs (`git.harden`) unless `hooks`
    names the folder to run them from: the lead's own, as the git watch found it (`trusted_hooks`).
    """
    upstream = upstream_of(repo, branch)
    if upstream is None and not git_out(repo, "remote").strip():
        return PushResult(branch, None, "skipped", "no remote")
    if upstream is None:
        return PushResult(branch, None, "skipped", f"{branch} has no upstream (`git push -u REMOTE {branch}` sets one)")
    if branch in protected:
        return PushResult(branch, upstream, "skipped", f"{branch} is protected (lanes.protected_branches); push it "
                          "yourself")
    timeout = _seconds("LANES_PUSH_TIMEOUT_S", PUSH_TIMEOUT_S)
    try:
        proc = run_git_capped(repo, "push", "--quiet", "--", upstream.remote,
                              f"refs/heads/{branch}:refs/heads/{upstream.remote_branch}", timeout_s=timeout,
                              config=(("core.hooksPath", hooks),) if hooks else ())
    except LanesError as exc:
        return PushResult(branch, upstream, "failed", exc.what)
    if proc.returncode != 0:
        return PushResult(branch, upstream, "failed", first_line(proc.stderr))
    return PushResult(branch, upstream, "pushed", "")
