"""The shape of the house: engine subpackages with contracts, one door for the app, no import circles.

What may import what is stated once, in pyproject's `[tool.importlinter]` contracts: the engine's
layers, the engine without Textual or Rich, the app and the widgets above the engine and through its
door. `test_import_contracts_hold` runs them (`.ci/lint-imports`, as `.ci/run` does). The rest is read
from the source with `ast` (nothing is imported) and from those contracts: a module dropped straight
into `engine/`, a subpackage without its layer or its docstring, a circle between modules, a door
whose lists disagree.
"""

from __future__ import annotations

import ast
import os
import re
import shutil
import subprocess
import sys
import tomllib
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
ENGINE = ROOT / "engine"
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())
#: Folder -> installed package name (pyproject's package-dir; `lanes_tui` itself is only the root).
FOLDERS = {folder: name for name, folder in PYPROJECT["tool"]["setuptools"]["package-dir"].items()
           if name != "lanes_tui"}
#: The import contracts by id (`[[tool.importlinter.contracts]]`).
CONTRACTS = {contract["id"]: contract for contract in PYPROJECT["tool"]["importlinter"]["contracts"]}
DOOR = "lanes_tui.engine"
SUBPACKAGES = sorted(p.parent.name for p in ENGINE.glob("*/__init__.py"))


def module_name(path: Path) -> str:
    rel = path.relative_to(ROOT).with_suffix("")
    parts = [FOLDERS[rel.parts[0]], *rel.parts[1:]]
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def source_files(folder: str) -> list[Path]:
    return sorted((ROOT / folder).rglob("*.py"))


def imports(path: Path) -> Iterator[tuple[int, str]]:
    """Every module `path` imports (top level, inside functions and under TYPE_CHECKING alike), with
    `from X import Y` also yielding `X.Y` so `from lanes_tui.engine.git import worktrees` counts."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    package = module_name(path) if path.name == "__init__.py" else module_name(path).rpartition(".")[0]
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield node.lineno, alias.name
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")
                anchor = anchor[: len(anchor) - node.level + 1]
                base = ".".join([*anchor, base] if base else anchor)
            yield node.lineno, base
            for alias in node.names:
                yield node.lineno, f"{base}.{alias.name}"


def test_engine_has_no_loose_modules() -> None:
    loose = sorted(p.name for p in ENGINE.glob("*.py") if p.name != "__init__.py")
    assert loose == [], f"move {loose} into a subpackage of engine/ that says what it holds"


@pytest.mark.parametrize("subpackage", SUBPACKAGES)
def test_each_subpackage_states_its_contract(subpackage: str) -> None:
    doc = ast.get_docstring(ast.parse((ENGINE / subpackage / "__init__.py").read_text()))
    assert doc, f"engine/{subpackage}/__init__.py needs a docstring: what it owns, what it may import"
    assert "Owns" in doc or "owns" in doc.lower()
    assert "never" in doc.lower(), f"engine/{subpackage}: say what it must never import"


def test_the_house_has_its_rooms() -> None:
    assert {"core", "state", "config", "git", "procs", "inbox", "channels", "lanes", "decisions", "supervisor",
            "sim", "live"} <= set(SUBPACKAGES)


def _door() -> tuple[list[str], dict[str, str], set[str]]:
    tree = ast.parse((ENGINE / "__init__.py").read_text())
    all_names: list[str] = []
    exports: dict[str, str] = {}
    checked: set[str] = set()
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "__all__" for t in node.targets):
            all_names = list(ast.literal_eval(node.value))
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) and node.target.id == "_EXPORTS":
            assert node.value is not None
            exports = dict(ast.literal_eval(node.value))
        elif isinstance(node, ast.If) and isinstance(node.test, ast.Name) and node.test.id == "TYPE_CHECKING":
            for sub in node.body:
                assert isinstance(sub, ast.ImportFrom) and sub.module
                if not sub.module.startswith(DOOR + "."):
                    continue  # typing helpers
                for alias in sub.names:
                    where = sub.module.removeprefix(DOOR + ".")
                    checked.add(f"{alias.asname or alias.name}={where}"
                                + ("" if alias.asname is None else f":{alias.name}"))
    return all_names, exports, checked


def test_door_lists_agree() -> None:
    """`__all__`, the lazy table and the TYPE_CHECKING imports (what mypy sees) name the same things."""
    all_names, exports, checked = _door()
    assert sorted(all_names) == sorted(exports)
    assert checked == {f"{name}={where}" for name, where in exports.items()}


def test_every_door_name_resolves() -> None:
    import lanes_tui.engine as door

    for name in door.__all__:
        assert getattr(door, name) is not None, name
    with pytest.raises(AttributeError):
        door.LaneStore  # noqa: B018 — not part of the door  # type: ignore[attr-defined]


def _cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One cycle of the graph as a path, or None."""
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        stack.append(node)
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == 1:
                return [*stack[stack.index(nxt):], nxt]
            if nxt not in state and (found := visit(nxt)):
                return found
        stack.pop()
        state[node] = 2
        return None

    for start in sorted(graph):
        if start not in state and (found := visit(start)):
            return found
    return None


def engine_layers() -> list[set[str]]:
    """The engine's layers, bottom first, from the `engine-layers` contract (`a | b`: side by side)."""
    contract = CONTRACTS["engine-layers"]
    return [{name.strip() for name in re.split(r"[|:]", layer)} for layer in reversed(contract["layers"])]


def allowed_exceptions() -> set[tuple[str, str]]:
    """(importer, imported) of every import a contract lets through on purpose (`ignore_imports`)."""
    found = set()
    for contract in CONTRACTS.values():
        for line in contract.get("ignore_imports", []):
            importer, _, imported = line.partition("->")
            found.add((importer.strip(), imported.strip()))
    return found


def test_every_subpackage_has_its_layer() -> None:
    placed = sorted(name for layer in engine_layers() for name in layer)
    assert placed == SUBPACKAGES, ("a new subpackage needs its line in pyproject's `engine-layers` contract "
                                   "and in docs/layout.md")


def lint_imports(root: Path) -> subprocess.CompletedProcess[str]:
    """`.ci/lint-imports` of the checkout at `root`, on this interpreter (which has import-linter)."""
    return subprocess.run([str(root / ".ci" / "lint-imports")], cwd=root, capture_output=True, text=True,
                          timeout=300, check=False, env={**os.environ, "PYTHON": sys.executable})


def test_import_contracts_hold() -> None:
    done = lint_imports(ROOT)
    assert done.returncode == 0, done.stdout + done.stderr
    assert f"Contracts: {len(CONTRACTS)} kept, 0 broken." in done.stdout, done.stdout


#: One import against each contract, planted in a copy of the checkout: folder-relative path -> source.
PLANTED = {
    "engine/core/planted_up.py": "from lanes_tui.engine.state import paths\n",  # engine-layers
    "engine/git/planted_inbox.py": "from lanes_tui.engine.inbox import files\n",  # engine-config-git-alone
    "engine/channels/planted_git.py": "from lanes_tui.engine.git import commands\n",  # engine-channels-no-git
    "engine/state/planted_ui.py": "import rich\n",  # engine-no-ui
    "widgets/planted_app.py": "from lanes_tui.app.dashboard import keys\n",  # ui-above-engine
    "app/planted_deep.py": "def f():\n    from lanes_tui.engine.state.store import LaneStore\n",  # engine-door
    "app/dashboard/planted_cli.py": "from lanes_tui.app.cli import args\n",  # app-parts
}


def test_the_contracts_catch_what_they_forbid(tmp_path: Path) -> None:
    """Not vacuous: each contract breaks on the one import planted against it, named with its line."""
    root = tmp_path / "checkout"
    for folder in PYPROJECT["tool"]["setuptools"]["package-dir"].values():
        shutil.copytree(ROOT / folder, root / folder, ignore=shutil.ignore_patterns("__pycache__"), dirs_exist_ok=True)
    shutil.copy(ROOT / "pyproject.toml", root)
    (root / ".ci").mkdir()
    shutil.copy(ROOT / ".ci" / "lint-imports", root / ".ci")
    for where, text in PLANTED.items():
        (root / where).write_text(text)
    done = lint_imports(root)
    assert done.returncode != 0
    assert f"Contracts: 0 kept, {len(CONTRACTS)} broken." in done.stdout, done.stdout
    for where in PLANTED:
        module = FOLDERS[where.split("/")[0]] + "." + where.split("/", 1)[1].removesuffix(".py").replace("/", ".")
        assert module in done.stdout, f"{module} not reported:\n{done.stdout}"


def test_no_module_import_circles() -> None:
    """Not even under TYPE_CHECKING: a circle there still means two modules that cannot be read apart."""
    modules = {module_name(p): p for folder in FOLDERS for p in source_files(folder)}
    graph: dict[str, set[str]] = {m: set() for m in modules}
    allowed = allowed_exceptions()
    for name, path in modules.items():
        for _, imported in imports(path):
            if (name, imported) in allowed:
                continue  # the contracts' deliberate exception (decisions.runners -> remote.ray_runner)
            if imported in modules and imported != name and not name.startswith(imported + "."):
                if modules[imported].name == "__init__.py" and imported == name.rpartition(".")[0]:
                    continue  # a module importing its own package's door
                graph[name].add(imported)
    cycle = _cycle(graph)
    assert cycle is None, "import circle: " + " → ".join(cycle)


def test_pyproject_packages_every_subpackage() -> None:
    """Nested ones too (`decisions.gates`): setuptools installs only the packages listed, so a missing
    one works from the checkout and is absent from a wheel."""
    packages = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"]
    assert {f"lanes_tui.engine.{p}" for p in SUBPACKAGES} <= set(packages)
    nested = {module_name(p) for p in ENGINE.rglob("__init__.py") if "__pycache__" not in p.parts}
    assert nested - set(packages) == set()
