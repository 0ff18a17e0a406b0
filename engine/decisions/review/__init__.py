"""The review of a lane before accept: by a model of another family, and by the lead with evidence.

Owns: `verdict` (who reviews a lane across model families, and the verdict read from the reviewer's
output), `prompt` (the reviewer's prompt, the text of its output, its read-only argv, the packet's
review and verification as readers see them; pure text), `run` (the review run: slot, read-only
snapshot worktree, the reviewer as a supervised process, the verdict into the packet), `verify`
(`lanes-tui verify`: the lead's own verification with evidence, tied to the lane's diff digest).
What a reviewer sees is `decisions.lane_diff`; docs/review.md says how it works for the lead.
Never textual or rich. Its place in the layers: pyproject's `[tool.importlinter]` contracts (docs/layout.md).
"""
