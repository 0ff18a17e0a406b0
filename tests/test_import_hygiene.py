"""engine/ must never import textual or rich: each module is imported in a fresh interpreter."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ENGINE = Path(__file__).resolve().parent.parent / "engine"
MODULES = sorted(p.stem for p in ENGINE.glob("*.py") if p.stem != "__init__")


@pytest.mark.parametrize("module", MODULES)
def test_engine_module_imports_no_ui(module: str) -> None:
    code = (f"import sys, lanes_tui.engine.{module}\n"
            "bad = sorted(m for m in sys.modules if m.split('.')[0] in ('textual', 'rich'))\n"
            "print(','.join(bad))")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert proc.stdout.strip() == "", f"lanes_tui.engine.{module} pulled in {proc.stdout.strip()}"


def test_headless_cli_imports_no_ui() -> None:
    """`lanes-tui ask` runs inside agents' shells: it must not pay for Textual."""
    code = ("import sys, lanes_tui.app.cli\n"
            "print(','.join(sorted(m for m in sys.modules if m.split('.')[0] in ('textual', 'rich'))))")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert proc.stdout.strip() == ""


def test_engine_has_at_least_the_core_modules() -> None:
    """Guards the parametrisation above against silently testing nothing."""
    assert {"supervisor", "engine", "config", "watchdog", "launcher"} <= set(MODULES)
