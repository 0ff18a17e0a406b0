"""A Textual the pin does not admit, forced into a venv: the dashboard draws through the stock paths.

Textual 8.2.6 is the release on which the fast paths' private shape differs (`StylesCache.render_line`
lacks `native_ansi`, added in 8.2.7) and on which an unfenced dashboard panicked at its first paint.
This builds a venv with exactly that Textual (past the pin: lanes-tui installed with `--no-deps`),
runs the real `LanesApp` and the list and Output panes headless in it, and checks that the start-up
checks turned off what no longer fits, said so in one log line, and that the panes drew their rows.

The venv is kept between runs (`LANES_TEST_CACHE`, default `~/.cache/lanes-tui-tests`): the first run
installs from PyPI (~40 s), later ones reuse it. Without a package index the test skips and says why.
"""

from __future__ import annotations

import fcntl
import os
import subprocess
import sys
import venv
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parent.parent
OLD_TEXTUAL = "8.2.6"
#: lanes-tui's other runtime dependencies, as pyproject.toml names them (Textual apart).
OTHER_DEPENDENCIES = ("rich>=14.2", "psutil>=5.9", "gitpython>=3.1.41", "tomlkit>=0.12", "pyte>=0.8")

SCRIPT = r"""
import asyncio, logging, sys
from pathlib import Path

import textual
from textual.containers import Vertical

logging.basicConfig(stream=sys.stderr, level=logging.INFO, format="%(name)s %(levelname)s %(message)s")
from lanes_tui.app.dashboard.app import LanesApp
from lanes_tui.engine import Engine
from lanes_tui.widgets import LanesTable, OutputPane
from tests.snapshot_apps.widget_apps import WidgetHost, lane


async def main() -> None:
    repo = Path(sys.argv[1])
    app = LanesApp(repo, engine=Engine(repo, use_inotify=False, use_pidfd=False))
    async with app.run_test(size=(120, 36)) as pilot:
        await pilot.pause()
        dashboard = app.export_screenshot()
    table, pane = LanesTable(), OutputPane()
    host = WidgetHost(Vertical(table, pane))
    async with host.run_test(size=(100, 30)) as pilot:
        table.sync([lane("past-pin-a1", "running")], 1_000_000.0)
        pane.show("past-pin-a1", "first line\nsecond line\n")
        await pilot.pause()
        panes = host.export_screenshot()
    print("TEXTUAL", textual.__version__)
    print("DASHBOARD", "Lanes" in dashboard and "Output" in dashboard)
    print("ROWS", "past-pin-a1" in panes and "second&#160;line" in panes)


asyncio.run(main())
"""


def _cache() -> Path:
    return Path(os.environ.get("LANES_TEST_CACHE") or Path.home() / ".cache" / "lanes-tui-tests")


def _old_textual_venv() -> Path:
    """The venv with Textual 8.2.6 and this checkout of lanes-tui (editable, without its dependencies).

    The dependencies are installed once; the editable install again whenever the checkout is another
    one (the stamp names it), so a venv a deleted clone made never imports from where it was."""
    home = _cache() / f"textual-{OLD_TEXTUAL}"
    home.parent.mkdir(parents=True, exist_ok=True)
    with (home.parent / f"textual-{OLD_TEXTUAL}.lock").open("a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # (two test workers, or two suites, build it once)
        return _build(home)


def _build(home: Path) -> Path:
    python = home / "bin" / "python"
    stamp = home / "installed"
    done_for = stamp.read_text().split("\n") if stamp.exists() else []
    if done_for[:1] == [OLD_TEXTUAL] and done_for[1:2] == [str(ROOT)]:
        return python
    pip = [str(python), "-m", "pip", "install", "-q", "--disable-pip-version-check"]
    steps = [[*pip, "--no-deps", "-e", str(ROOT)]]
    if done_for[:1] != [OLD_TEXTUAL]:
        venv.EnvBuilder(with_pip=True, clear=True).create(home)
        steps.insert(0, [*pip, f"textual=={OLD_TEXTUAL}", *OTHER_DEPENDENCIES, "pytest"])
    for argv in steps:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=600)
        if done.returncode != 0:
            pytest.skip(f"could not build a venv with Textual {OLD_TEXTUAL} (no package index?): "
                        f"{(done.stderr or done.stdout).strip().splitlines()[-1:]}")
    stamp.write_text(f"{OLD_TEXTUAL}\n{ROOT}\n")
    return python


def test_a_textual_past_the_pin_draws_the_dashboard_through_the_stock_paths(repo: Path, tmp_path: Path) -> None:
    python = _old_textual_venv()
    env = {key: value for key, value in os.environ.items() if key != "LANES_TUI_STOCK"}
    env["PYTHONPATH"] = str(ROOT)  # (the tests' widget host and lane builder)
    done = subprocess.run([str(python), "-c", SCRIPT, str(repo)], capture_output=True, text=True,
                          timeout=300, env=env, cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-3000:]
    out = done.stdout.split("\n")
    assert f"TEXTUAL {OLD_TEXTUAL}" in out, done.stdout
    assert "DASHBOARD True" in out and "ROWS True" in out, done.stdout
    fence_lines = [line for line in done.stderr.splitlines() if line.startswith("lanes_tui.fast ")]
    assert len(fence_lines) == 1, done.stderr[-3000:]
    assert f"Textual {OLD_TEXTUAL}: fast paths off" in fence_lines[0]
    assert "framed_rows: StylesCache.render" in fence_lines[0] and "lacks native_ansi" in fence_lines[0]


def test_the_venv_really_holds_the_old_textual() -> None:
    """The check above is only worth something if its venv runs 8.2.6 and not ours (`sys.executable`'s)."""
    python = _old_textual_venv()
    assert python.resolve() != Path(sys.executable).resolve()
    done = subprocess.run([str(python), "-c", "import textual; print(textual.__version__)"],
                          capture_output=True, text=True, timeout=60)
    assert done.stdout.strip() == OLD_TEXTUAL
