"""The shape of the house: engine subpackages with contracts, one door for the app, no import circles.

Read from the source with `ast` (nothing is imported), so a new deep import from `app/` or
`widgets/`, a module dropped straight into `engine/` or a circle between subpackages fails here
with the file and line to fix.
"""

from __future__ import annotations

import ast
import itertools
import tomllib
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
ENGINE = ROOT / "engine"
#: Folder -> installed package name (pyproject's package-dir).
FOLDERS = {"app": "lanes_tui.app", "widgets": "lanes_tui.widgets", "engine": "lanes_tui.engine"}
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


def deep_engine_imports(folder: str) -> list[str]:
    """`file:line module` for every import from the engine other than through the door."""
    found = []
    for path in source_files(folder):
        for line, name in imports(path):
            if name.startswith(DOOR + ".") and name.rpartition(".")[0] != DOOR:
                found.append(f"{path.relative_to(ROOT)}:{line} {name}")
    return found


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


@pytest.mark.parametrize("folder", ["app", "widgets"])
def test_app_and_widgets_use_only_the_door(folder: str) -> None:
    deep = deep_engine_imports(folder)
    assert deep == [], "import these from `lanes_tui.engine` (add them to its door if needed): " + "; ".join(deep)


def test_the_door_check_catches_a_deep_import(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The check above is not vacuous: a planted deep import is reported with file and line."""
    fake_root = tmp_path / "repo"
    (fake_root / "app").mkdir(parents=True)
    (fake_root / "app" / "x.py").write_text("from lanes_tui.engine import Engine\n"
                                            "def f():\n    from lanes_tui.engine.state.store import LaneStore\n")
    monkeypatch.setitem(globals(), "ROOT", fake_root)
    assert deep_engine_imports("app") == ["app/x.py:3 lanes_tui.engine.state.store",
                                          "app/x.py:3 lanes_tui.engine.state.store.LaneStore"]


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


def _package_of(module: str) -> str | None:
    parts = module.split(".")
    if parts[:2] != ["lanes_tui", "engine"] or len(parts) < 3:
        return None
    return parts[2] if parts[2] in SUBPACKAGES else None


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


def _package_edges() -> Iterator[tuple[str, str, str]]:
    """(`file:line`, importing subpackage, imported subpackage) for every cross-subpackage import."""
    for path in source_files("engine"):
        here = _package_of(module_name(path))
        if here is None:
            continue
        for line, name in imports(path):
            there = _package_of(name)
            if there is not None and there != here:
                yield f"{path.relative_to(ROOT)}:{line}", here, there


def test_no_circle_between_engine_subpackages() -> None:
    graph: dict[str, set[str]] = {p: set() for p in SUBPACKAGES}
    where: dict[tuple[str, str], str] = {}
    for place, here, there in _package_edges():
        graph[here].add(there)
        where.setdefault((here, there), place)
    cycle = _cycle(graph)
    assert cycle is None, "subpackage circle " + " → ".join(cycle) + ": " + ", ".join(
        where[(a, b)] for a, b in itertools.pairwise(cycle))


#: The order of docs/layout.md and the README: a subpackage imports only those before it.
LAYERS = ["core", "state", "config", "git", "procs", "inbox", "channels", "lanes", "decisions", "supervisor", "remote",
          "sim", "plans", "live"]


def test_subpackages_import_only_downwards() -> None:
    assert sorted(LAYERS) == SUBPACKAGES, "a new subpackage needs its place in LAYERS and in docs/layout.md"
    upward = [f"{place} {here} → {there}" for place, here, there in _package_edges()
              if LAYERS.index(there) > LAYERS.index(here)]
    assert upward == [], "imports against the layering of docs/layout.md: " + "; ".join(sorted(set(upward)))


def test_no_module_import_circles() -> None:
    """Not even under TYPE_CHECKING: a circle there still means two modules that cannot be read apart."""
    modules = {module_name(p): p for folder in FOLDERS for p in source_files(folder)}
    graph: dict[str, set[str]] = {m: set() for m in modules}
    for name, path in modules.items():
        for _, imported in imports(path):
            if imported in modules and imported != name and not name.startswith(imported + "."):
                if modules[imported].name == "__init__.py" and imported == name.rpartition(".")[0]:
                    continue  # a module importing its own package's door
                graph[name].add(imported)
    cycle = _cycle(graph)
    assert cycle is None, "import circle: " + " → ".join(cycle)


def test_pyproject_packages_every_subpackage() -> None:
    packages = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"]
    assert {f"lanes_tui.engine.{p}" for p in SUBPACKAGES} <= set(packages)
