"""The lead's decisions and what they rest on: gates, packets, check, accept, abandon, recover, finish.

Owns: `gates/` (the gates: planned, run in heavy slots, logged; its own docstring lists its modules),
`review/` (the review by another model family and the lead's verification), `packet` (the result record),
`check` (gates → packet → ready / rejected), `accept`, `accept_plan` and `accept_journal` (the guarded,
journalled accept, and the journals it could not finish), `accept_remote` (accept of a lane on a Ray node),
`commit_hooks` (the repository's pre-commit and commit-msg hooks, run by accept under the gates' fence),
`abandon`, `recover`, `finish`,
`reconcile` (state rebuilt from receipts after a restart), `deadlines` (a stopped supervisor's lane
`unreachable`, and the wall-clock limit kept when the supervisor cannot), `scope` (files a lane changed outside its
ticket's scope), `lane_diff` (the lane's scoped diff with per-file digests: what a
reviewer and accept see), `queue` (the accept queue: every ready lane in an order the radar's
conflicts allow), `ranking` (the ranks of a `run --best-of N` group once all its lanes have ended),
`stop` (`lanes-tui stop`: the agent stopped, the work kept, the tree confirmed gone), `shipping`
(`finish --pr` through gh, and the pre-push hook `init --hooks` installs and runs: the hook names this
module's path, so it stays here), `pr_checks` and `ci_findings` (a pull request's CI followed, and its
failures as findings), `runners` (the runner `[runner] kind` names), `lead_note` (the lead's own
findings for a relaunch), `comment` (a hunk comment to a running agent or kept for the next
attempt, and one message to several lanes), `api` (`Decisions`: every decision, one method with one signature, for the
command line and the dashboard), `results` (the typed packet, review verdict and verification it
returns), and `commands` (`offloaded`: a `Decisions` method run by the Engine in a worker thread).
Never textual or rich. Its place in the layers: pyproject's `[tool.importlinter]` contracts (docs/layout.md).
`runners` imports `remote.ray_runner` (only for `[runner] kind = "ray"`): the layers' one exception.
"""
