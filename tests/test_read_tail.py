"""`core.limits.read_tail`: the end of a file of any size, and where that end is, in one open."""

from __future__ import annotations

from pathlib import Path

from lanes_tui.engine.core.limits import read_tail
from lanes_tui.engine.lanes.control_client import tail_lines


def test_the_last_bytes_and_the_offset_they_end_at(tmp_path: Path) -> None:
    log = tmp_path / "output.log"
    log.write_bytes(b"".join(b"line %d\n" % i for i in range(1000)))
    size = log.stat().st_size
    data, end = read_tail(log, 64)
    assert end == size and data == log.read_bytes()[-64:]
    small, end = read_tail(log, 10 * size)  # a window larger than the file: all of it
    assert small == log.read_bytes() and end == size


def test_no_file_is_empty_and_other_errors_are_raised(tmp_path: Path) -> None:
    assert read_tail(tmp_path / "missing.log", 64) == (b"", 0)
    try:
        read_tail(tmp_path, 64)  # a folder: not a missing file, so the caller hears of it
    except IsADirectoryError:
        pass
    else:
        raise AssertionError("reading a folder's tail did not fail")


def test_peek_drops_the_first_line_of_a_window_that_cut_the_file(tmp_path: Path) -> None:
    log = tmp_path / "output.log"
    log.write_text("".join(f"row {i:03d}\n" for i in range(100)))  # 8 bytes a line
    assert tail_lines(log, 3, window=20) == ["row 098", "row 099"]  # "097" was cut to "97\n": dropped
    # A window that happens to begin on a line drops it too: without the byte before, it cannot know.
    assert tail_lines(log, 3, window=24) == ["row 098", "row 099"]
    assert tail_lines(log, 500, window=10_000)[0] == "row 000"  # nothing cut, nothing dropped
