"""The lead's decisions and what they rest on: gates, packets, check, accept, abandon, recover, finish.

Owns: `gates` (the configured commands in heavy slots), `gate_plan` (the effective steps: the
project's venv, detected commands, timeouts), `gate_log` (progress lines and each step's kept output),
`shared_envs` (the digest of shared virtualenvs a lane must not change), `packet` (the result record), `check`
(gates → packet → ready / rejected), `gate_fence` (the gates' environment and kernel fence, for gates and
hooks), `accept`, `accept_plan` and `accept_journal` (the guarded, journalled accept, and the journals it
could not finish), `commit_hooks` (the repository's pre-commit and commit-msg hooks, run by accept),
`abandon`, `recover`, `finish`,
`reconcile` (state rebuilt from receipts after a restart), `deadlines` (a stopped supervisor's lane
`unreachable`, and the wall-clock limit kept when the supervisor cannot), `scope` (files a lane changed outside its
ticket's scope), `review_verdict` (who reviews a lane across model families, and the verdict read
from the reviewer's output), `lane_diff` (the lane's scoped diff with per-file digests: what a
reviewer and accept see), `review_prompt` (the reviewer's prompt, the text of its output, its
read-only argv, the packet's review as readers see it), `review_run` (the review run: slot, read-only
snapshot worktree, the reviewer as a supervised process, the verdict into the packet), `verify` (the
lead's own verification with evidence), `queue` (the accept queue: every ready lane in an order the radar's
conflicts allow), `ranking` (the ranks of a `run --best-of N` group once all its lanes have ended),
`stop` (`lanes-tui stop`: the agent stopped, the work kept, the tree confirmed gone), `shipping`
(`finish --pr` through gh, and the pre-push hook `init --hooks` installs and runs), and `commands`
(the async wrappers the Engine offers the dashboard).
Never textual or rich. Its place in the layers: pyproject's `[tool.importlinter]` contracts (docs/layout.md).
`runners` imports `remote.ray_runner` (only for `[runner] kind = "ray"`): the layers' one exception.
"""
