"""`core.digest` and `core.atomic.temp_beside`: the supervisor's OpenSSL-free and tempfile-free helpers
(issue 15, B3) give exactly what the libraries they replace give."""

from __future__ import annotations

import hashlib
import os
import stat
from pathlib import Path

import pytest

from lanes_tui.engine.core.atomic import temp_beside, write_bytes_atomic
from lanes_tui.engine.core.digest import content_hasher, sha256_hex


@pytest.mark.parametrize("data", [b"", b"abc", "/home/lead/repo €".encode(), os.urandom(5000)])
def test_sha256_hex_is_hashlibs_digest(data: bytes) -> None:
    assert sha256_hex(data) == hashlib.sha256(data).hexdigest()


def test_content_hasher_is_an_incremental_sha256() -> None:
    hasher = content_hasher()
    hasher.update(b"first ")
    hasher.update(b"second")
    assert hasher.hexdigest() == hashlib.sha256(b"first second").hexdigest()


def test_temp_beside_makes_a_new_private_file_next_to_the_target(tmp_path: Path) -> None:
    target = tmp_path / "record.json"
    fd, name = temp_beside(target)
    try:
        os.write(fd, b"x")
    finally:
        os.close(fd)
    made = Path(name)
    assert made.parent == tmp_path and made.name.startswith(".record.json.") and made.name.endswith(".tmp")
    assert stat.S_IMODE(made.stat().st_mode) == 0o600
    fd2, name2 = temp_beside(target)
    os.close(fd2)
    assert name2 != name  # each call a fresh name


def test_temp_beside_never_opens_a_planted_name(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A symlink (or any file) already at the chosen name is never opened: the next name is tried."""
    outside = tmp_path / "outside.txt"
    outside.write_text("keep")
    names = iter([bytes.fromhex("aaaaaaaaaaaa"), bytes.fromhex("bbbbbbbbbbbb")])
    monkeypatch.setattr(os, "urandom", lambda n: next(names))
    (tmp_path / ".state.json.aaaaaaaaaaaa.tmp").symlink_to(outside)
    fd, name = temp_beside(tmp_path / "state.json")
    os.close(fd)
    assert name.endswith(".state.json.bbbbbbbbbbbb.tmp")
    assert outside.read_text() == "keep"


def test_atomic_write_leaves_no_temp_file(tmp_path: Path) -> None:
    target = tmp_path / "sub" / "state.json"
    write_bytes_atomic(target, b"{}\n")
    write_bytes_atomic(target, b"{\"a\": 1}\n")
    assert target.read_bytes() == b"{\"a\": 1}\n"
    assert sorted(p.name for p in target.parent.iterdir()) == ["state.json"]
