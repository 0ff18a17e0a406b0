"""Git: the command line for everything that writes, GitPython for read-only views.

Owns: `commands` (git subprocesses with timeouts and one-line errors), `worktrees` (a lane's worktree
and `lane/` branch: create, digest, guarded removal), `lane_paths` (where a lane's worktree must be,
derived from its id and the root recorded at creation, with git as the second witness),
`lead_checkout` (a snapshot of the lead's checkout, to notice writes outside a worktree), `views`
(what the dashboard shows of a worktree: changed files, commits, diff stats, the lane diff), `radar`
(the conflict radar: files two lanes both changed, trial merges with `git merge-tree`), `review_tree`
(a reviewer's read-only view: a snapshot commit made through a temporary index, checked out detached
beside the lane worktrees, removed with the same guards), `upstream` (the target's upstream: the capped
fetch before lanes are cut and accepts rebase, behind-upstream warnings, `finish`'s push), `harden`
(every git lanes-tui runs: no fsmonitor, hook or lane-written driver; a lane's git dir derived from its
id), `git_snapshot` (the shared config, hooks and attributes as a lane found them, compared at each
decision), `watch` (the targets and remotes as the first lane found them: status, doctor, finish).
Only `views` imports GitPython (lazily, per call, closed after use), so a supervisor or
`lanes-tui ask` never loads it. Its place in the layers: pyproject's `[tool.importlinter]` contracts (docs/layout.md).
"""
