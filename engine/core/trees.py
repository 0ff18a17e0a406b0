"""Removing a folder that a lane's processes wrote: best effort, symlinks never followed.

Not `shutil.rmtree`: a supervisor does this every run (a TMPDIR, an interrupted git operation's state),
and shutil brings bz2 and lzma into its memory (B3).
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path

__all__ = ["remove_tree"]


def remove_tree(folder: Path | str) -> None:
    """Remove `folder` and all in it; a link inside is removed, never followed; errors are skipped."""
    for top, dirs, files in os.walk(folder, topdown=False):
        for name in files:
            with contextlib.suppress(OSError):
                os.unlink(os.path.join(top, name))
        for name in dirs:
            path = os.path.join(top, name)
            with contextlib.suppress(OSError):
                os.unlink(path) if os.path.islink(path) else os.rmdir(path)
    with contextlib.suppress(OSError):
        os.rmdir(folder)
