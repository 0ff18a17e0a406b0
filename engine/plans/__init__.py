"""Tasks from plan files: `## Phase N` blocks of a Markdown plan (`run --plan F --phase N`).

Owns: `phases`. May import: `core`. Never textual or rich.
"""
