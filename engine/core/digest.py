"""SHA-256 of short names (a repository path, a task text, a lane folder) without loading OpenSSL.

`hashlib` loads OpenSSL's libcrypto through `_hashlib` on import: 3.7 MB of RSS in every process that
touches it, and every lane's supervisor hashes a few paths (issue 15, B3: the lean supervisor). For a
few hundred bytes CPython's own sha256 is as fast, and the digest is the same, so names and ids use
this; file contents (the lane diff, the radar) keep `hashlib`, which is five times faster on megabytes.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any


def _builtin_sha256() -> Callable[[bytes], Any]:
    """CPython's own sha256 (`_sha256` up to 3.11, `_sha2` from 3.12); hashlib's where neither exists."""
    for name in ("_sha256", "_sha2"):
        try:
            return importlib.import_module(name).sha256  # type: ignore[no-any-return]
        except (ImportError, AttributeError):
            continue
    import hashlib  # a build without them: the same digest, OpenSSL loaded

    return hashlib.sha256


_SHA256 = _builtin_sha256()


def sha256_hex(data: bytes) -> str:
    """The SHA-256 of `data` as 64 hex digits, as `hashlib.sha256(data).hexdigest()` gives it."""
    return str(_SHA256(data).hexdigest())


def content_hasher() -> Any:
    """A `hashlib.sha256()` for file contents (OpenSSL's, five times CPython's own on megabytes).

    Imported on first use: the modules that hash files are also imported by a lane's supervisor,
    which hashes no file until its gates run (see the module's docstring).
    """
    import hashlib

    return hashlib.sha256()
