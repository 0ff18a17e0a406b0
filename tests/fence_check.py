"""Finds every touch of a Textual or Rich private name outside the fence (`fast/`), by reading the source.

Used by `tests/test_fence.py`. Four kinds of touch are reported, each as `file:line what`:

- an import of a private module or name: any component of the path starting with `_`
  (`textual._compositor`, `from textual import _time`, `from textual.widgets._data_table import X`,
  `from textual.widgets.data_table import _EMPTY_TEXT`), also written as a string (`import_module`);
- in a class that derives from a Textual or Rich class (directly, through our own classes or through the
  fence's), a private name of a class in its Textual/Rich MRO used on `self`/`cls`/`super()`, overridden
  (`def _render_line`) or assigned (`self._styles_cache = ...`). The MRO is Textual's own, found by
  importing the base class at test time; its names are those in each class's `__dict__` plus the
  `self._x` it assigns in its source (instance attributes live nowhere else);
- anywhere else, `obj._name` (or `getattr(obj, "_name")`) where `_name` is private in Textual or Rich
  (defined anywhere in their source) and our own code defines no `_name` outside Textual-derived
  classes: `t = table; t._render_cell` is caught whatever `t` is called, and our own `self._cells` of
  a plain class is not (a name both we and Textual define is left to the first two checks);

so neither an alias nor a subclass of our own hides a touch, and our own `_private` names pass.
"""

from __future__ import annotations

import ast
import importlib
import importlib.util
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path

#: Third-party packages whose private names only the fence may touch.
GUARDED = ("textual", "rich")
#: The fence's installed name: a class derived from one of its classes is Textual-derived.
FENCE_PACKAGE = "lanes_tui.fast"
_MODULE_STRING = re.compile(r"^(textual|rich)(\.\w+)+$")
_ATTR_FUNCS = {"getattr", "setattr", "hasattr", "delattr"}


def private(name: str) -> bool:
    """`_x`, not a dunder (`__init__` is everybody's)."""
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


def guarded_module(name: str) -> bool:
    return name.split(".")[0] in GUARDED


@dataclass
class _Defs:
    """Private names a body of source defines: everywhere, and per class (by qualified name)."""

    names: set[str] = field(default_factory=set)
    by_class: dict[str, set[str]] = field(default_factory=dict)


def _defined_names(tree: ast.AST) -> _Defs:
    """Private names defined in `tree`: functions, class attributes, `self._x` assignments, module names."""
    defs = _Defs()

    def visit(node: ast.AST, owner: str | None) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.ClassDef):
                qual = f"{owner}.{child.name}" if owner else child.name
                defs.by_class.setdefault(qual, set())
                visit(child, qual)
                continue
            names: list[str] = []
            if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef):
                names.append(child.name)
            elif isinstance(child, ast.Assign | ast.AnnAssign | ast.AugAssign):
                targets = child.targets if isinstance(child, ast.Assign) else [child.target]
                for target in targets:
                    for sub in ast.walk(target):
                        if isinstance(sub, ast.Name):
                            names.append(sub.id)
                        elif isinstance(sub, ast.Attribute) and isinstance(sub.value, ast.Name) and \
                                sub.value.id in ("self", "cls"):
                            names.append(sub.attr)
            for name in names:
                if private(name):
                    defs.names.add(name)
                    if owner:
                        defs.by_class[owner].add(name)
            visit(child, owner)

    visit(tree, None)
    return defs


@cache
def guarded_sources() -> dict[str, _Defs]:
    """Module name -> the private names its source defines, for every module of Textual and Rich."""
    found: dict[str, _Defs] = {}
    for package in GUARDED:
        spec = importlib.util.find_spec(package)
        assert spec is not None and spec.submodule_search_locations, f"{package} is not installed"
        root = Path(next(iter(spec.submodule_search_locations)))
        for path in root.rglob("*.py"):
            rel = path.relative_to(root.parent).with_suffix("")
            name = ".".join(rel.parts[:-1] if rel.name == "__init__" else rel.parts)
            found[name] = _defined_names(ast.parse(path.read_bytes(), filename=str(path)))
    return found


@cache
def guarded_private_names() -> frozenset[str]:
    """Every private name Textual's and Rich's own source defines, in any module or class."""
    return frozenset(name for defs in guarded_sources().values() for name in defs.names)


def mro_private_names(cls: type) -> frozenset[str]:
    """The private names `cls` has from the Textual and Rich classes in its MRO (by introspection), with
    the instance attributes those classes assign in their source."""
    names: set[str] = set()
    for base in cls.__mro__:
        if not guarded_module(base.__module__):
            continue
        names.update(n for n in vars(base) if private(n))
        defs = guarded_sources().get(base.__module__)
        if defs is not None:
            names.update(defs.by_class.get(base.__qualname__, ()))
    return frozenset(names)


@dataclass(frozen=True)
class Source:
    """One of our modules: its path (for the report), its installed name and its parsed text."""

    path: str
    module: str
    tree: ast.Module


def _imported_names(tree: ast.Module) -> dict[str, str]:
    """Local name -> the dotted name it was imported as (`Log` -> `textual.widgets.Log`)."""
    names: dict[str, str] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                names[alias.asname or alias.name.split(".")[0]] = alias.name if alias.asname else \
                    alias.name.split(".")[0]
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            for alias in node.names:
                names[alias.asname or alias.name] = f"{node.module}.{alias.name}"
    return names


def _dotted(node: ast.expr) -> str | None:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        head = _dotted(node.value)
        return f"{head}.{node.attr}" if head else None
    if isinstance(node, ast.Subscript):  # DataTable[Text]
        return _dotted(node.value)
    return None


def _resolve(dotted: str) -> type | None:
    """Import `pkg.mod.Class` (Textual's, Rich's or the fence's) and return the class."""
    module, _, attr = dotted.rpartition(".")
    while module:
        try:
            found: object = importlib.import_module(module)
        except ImportError:
            module, _, rest = module.rpartition(".")
            attr = f"{rest}.{attr}"
            continue
        for part in attr.split("."):
            found = getattr(found, part, None)
        return found if isinstance(found, type) else None
    return None


class _Classes:
    """Which of our classes derive from a Textual or Rich class, and the private names that gives them."""

    def __init__(self, sources: Iterable[Source]) -> None:
        self._bases: dict[str, list[str]] = {}  # our class name -> its bases, as dotted import names
        for source in sources:
            imported = _imported_names(source.tree)
            for node in ast.walk(source.tree):
                if isinstance(node, ast.ClassDef):
                    bases = []
                    for base in node.bases:
                        dotted = _dotted(base)
                        if dotted:
                            head, _, rest = dotted.partition(".")
                            full = imported.get(head, head)
                            bases.append(f"{full}.{rest}" if rest else full)
                    self._bases.setdefault(node.name, []).extend(bases)

    @cache  # noqa: B019  (one instance per check: the cache dies with it)
    def inherited(self, name: str) -> frozenset[str]:
        """Private names class `name` (ours) inherits from Textual or Rich; empty if it derives from neither."""
        names: set[str] = set()
        for base in self._bases.get(name, []):
            if guarded_module(base) or base.startswith(FENCE_PACKAGE + "."):
                cls = _resolve(base)
                names.update(mro_private_names(cls) if cls is not None else guarded_private_names())
            elif base.startswith("lanes_tui."):
                names.update(self.inherited(base.rpartition(".")[2]))
            elif base in self._bases:
                names.update(self.inherited(base))
        return frozenset(names)


def _import_touches(tree: ast.Module) -> Iterator[tuple[int, str]]:
    for node in ast.walk(tree):
        paths: list[str] = []
        if isinstance(node, ast.Import):
            paths = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            paths = [f"{node.module}.{alias.name}" for alias in node.names]
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and _MODULE_STRING.match(node.value):
            paths = [node.value]
        for path in paths:
            if guarded_module(path) and any(private(part) for part in path.split(".")):
                yield node.lineno, f"imports {path}"


def check(sources: list[Source]) -> list[str]:
    """`file:line what` for every touch of a Textual or Rich private name in `sources` (none are the fence)."""
    classes = _Classes(sources)
    ours: set[str] = set()
    for source in sources:
        defs = _defined_names(source.tree)
        for qual, names in defs.by_class.items():
            ours.update(names - classes.inherited(qual.rpartition(".")[2]))  # its own, not Textual's
        module_level = _defined_names(ast.Module(body=[n for n in source.tree.body if not isinstance(n, ast.ClassDef)],
                                                 type_ignores=[]))
        ours.update(module_level.names)
    foreign = guarded_private_names() - ours
    found: list[str] = []
    for source in sources:
        found.extend(f"{source.path}:{line} {what}" for line, what in _import_touches(source.tree))
        found.extend(f"{source.path}:{line} {what}" for line, what in _name_touches(source.tree, classes, foreign))
    return sorted(set(found), key=lambda s: (s.split(":")[0], int(s.split(":")[1].split()[0]), s))


def _name_touches(tree: ast.Module, classes: _Classes, foreign: frozenset[str]) -> Iterator[tuple[int, str]]:
    imported = _imported_names(tree)

    def plain_module(node: ast.expr) -> bool:
        """`os._exit`: a name imported from outside Textual and Rich (their own privates are theirs)."""
        return isinstance(node, ast.Name) and node.id in imported and not guarded_module(imported[node.id])

    def visit(node: ast.AST, inherited: frozenset[str]) -> Iterator[tuple[int, str]]:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.ClassDef):
                own = classes.inherited(child.name)
                for item in child.body:
                    defined = [item.name] if isinstance(item, ast.FunctionDef | ast.AsyncFunctionDef) else [
                        t.id for t in (item.targets if isinstance(item, ast.Assign) else
                                       [item.target] if isinstance(item, ast.AnnAssign) else [])
                        if isinstance(t, ast.Name)]
                    for name in defined:
                        if name in own:
                            yield item.lineno, f"overrides {child.name}.{name} (Textual's private)"
                yield from visit(child, own)
                continue
            if isinstance(child, ast.Attribute) and private(child.attr):
                on_self = (isinstance(child.value, ast.Name) and child.value.id in ("self", "cls")) or (
                    isinstance(child.value, ast.Call) and isinstance(child.value.func, ast.Name)
                    and child.value.func.id == "super")
                if (child.attr in inherited) if on_self and inherited else (
                        child.attr in foreign and not plain_module(child.value)):
                    yield child.lineno, f"touches .{child.attr}"
            elif (isinstance(child, ast.Call) and isinstance(child.func, ast.Name) and child.func.id in _ATTR_FUNCS
                  and len(child.args) >= 2 and isinstance(child.args[1], ast.Constant)
                  and isinstance(child.args[1].value, str) and private(child.args[1].value)):
                name = child.args[1].value
                if name in foreign or name in inherited:
                    yield child.lineno, f"touches .{name} through {child.func.id}"
            yield from visit(child, inherited)

    yield from visit(tree, frozenset())


def sources_under(root: Path, folders: dict[str, str], fence: str) -> list[Source]:
    """Our modules in `folders` (folder -> installed package), the fence's folder left out."""
    found = []
    for folder, package in folders.items():
        if folder == fence:
            continue
        for path in sorted((root / folder).rglob("*.py")):
            rel = path.relative_to(root / folder).with_suffix("")
            parts = [package, *rel.parts]
            if parts[-1] == "__init__":
                parts.pop()
            found.append(Source(str(path.relative_to(root)), ".".join(parts),
                                ast.parse(path.read_bytes(), filename=str(path))))
    return found
