"""The fence's start-up checks: is what each fast path relies on still there, in the shape it was checked in?

A fast path overrides or calls private methods of Textual and assigns private attributes. A patch release
of Textual may change any of them (8.2.7 gave `StylesCache.render_line` a fourteenth parameter: on 8.2.6
the dashboard panicked at its first paint). So before the dashboard uses a fast path, its needs are
checked once: each private module imports, each method has the parameters it had on the checked
versions (names, in order, `inspect.signature`), each attribute it reads or assigns exists (a class
attribute, or one the class's `__init__` assigns: its code names it). A path whose needs fail is off:
its widget or screen takes Textual's stock path, and ONE log line (logger `lanes_tui.fast`, which the
dashboard writes to the state folder's engine log) names every path that is off and why.
`LANES_TUI_STOCK=1` turns every path off (and says so in the same one line, at info level).

A slower dashboard, never a crashed one.
"""

from __future__ import annotations

import importlib
import inspect
import logging
import os
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cache

__all__ = ["NEEDS", "PATHS", "STOCK_ENV", "Need", "enabled", "off_reasons", "recheck"]

STOCK_ENV = "LANES_TUI_STOCK"
log = logging.getLogger("lanes_tui.fast")


class _NoCode:
    co_names: tuple[str, ...] = ()


_NO_CODE = _NoCode()


@dataclass(frozen=True)
class Need:
    """One thing a fast path relies on: `module.owner.name`, a method with `params` (in order, `self`
    first) or, with `params` None, an attribute of the class or one its `__init__` assigns."""

    module: str
    owner: str
    name: str
    params: tuple[str, ...] | None = None

    def problem(self) -> str | None:
        """None if the need holds; else what is wrong, in a few words."""
        where = f"{self.owner}.{self.name}"
        try:
            module = importlib.import_module(self.module)
            owner = getattr(module, self.owner, _NO_CODE)
            if owner is _NO_CODE:  # a submodule not imported yet (`textual._time`)
                owner = importlib.import_module(f"{self.module}.{self.owner}")
        except ImportError as exc:
            return f"{self.module}.{self.owner} is gone ({exc})"
        if self.params is None:
            if hasattr(owner, self.name) or any(
                    self.name in getattr(getattr(base, "__init__", None), "__code__", _NO_CODE).co_names
                    for base in getattr(owner, "__mro__", ())):
                return None
            return f"{where} is gone"
        try:
            found = getattr(owner, self.name)
        except AttributeError:
            return f"{where} is gone"
        try:
            params = tuple(inspect.signature(found).parameters)
        except (TypeError, ValueError):
            return f"{where} has no signature"
        if params != self.params:  # (`cls` shows where a cache wraps a classmethod)
            return f"{where} {_difference(params, self.params)}"
        return None


def _difference(found: tuple[str, ...], expected: tuple[str, ...]) -> str:
    """What changed in a parameter list, in a few words: `(…) lacks native_ansi`, `(…) adds x`, or both lists."""
    missing = [p for p in expected if p not in found]
    extra = [p for p in found if p not in expected]
    if not missing and not extra:
        return f"takes ({', '.join(found)}) in another order"
    words = [f"lacks {', '.join(missing)}"] if missing else []
    words += [f"adds {', '.join(extra)}"] if extra else []
    return f"takes {len(found)} parameters, not {len(expected)}: " + " and ".join(words)


def _method(module: str, owner: str, name: str, *params: str) -> Need:
    return Need(module, owner, name, ("self", *params))


def _attrs(module: str, owner: str, *names: str) -> list[Need]:
    return [Need(module, owner, name) for name in names]


_STYLES = "textual._styles_cache"
#: Every fast path and what it relies on, as on Textual 8.2.7 and 8.2.8 (the versions the pin admits).
NEEDS: Mapping[str, list[Need]] = {
    "compositor": [
        _method("textual._compositor", "Compositor", "_get_renders", "crop"),
        _method("textual._compositor", "Compositor", "render_partial_update"),
        *_attrs("textual._compositor", "Compositor", "_dirty_regions", "visible_widgets"),
        *_attrs("textual.screen", "Screen", "_compositor"),
        _method("textual.widget", "Widget", "render_lines", "crop"),
    ],
    "frame_timer": [
        Need("textual.timer", "Timer", "__init__",
             ("self", "event_target", "interval", "name", "callback", "repeat", "skip", "pause")),
        _method("textual.timer", "Timer", "_run"),
        _method("textual.timer", "Timer", "_start"),
        _method("textual.timer", "Timer", "_tick", "next_timer", "count"),
        *_attrs("textual.timer", "Timer", "_active", "_reset", "_interval"),
        *_attrs("textual.message_pump", "MessagePump", "_timers"),
        *_attrs("textual.screen", "Screen", "_update_timer", "_on_timer_update"),
        Need("textual", "_time", "get_time"),
        Need("textual", "_time", "sleep", ("secs",)),
    ],
    "framed_rows": [
        _method(_STYLES, "StylesCache", "render", "styles", "size", "base_background", "background",
                "render_content_line", "filters", "border_title", "border_subtitle", "content_size", "padding",
                "crop", "opacity", "ansi_theme", "native_ansi"),
        _method(_STYLES, "StylesCache", "render_line", "styles", "y", "size", "content_size", "padding",
                "base_background", "background", "render_content_line", "border_title", "border_subtitle",
                "opacity", "ansi_theme", "native_ansi"),
        _method(_STYLES, "StylesCache", "clear"),
        Need(_STYLES, "StylesCache", "get_inner_outer", ("cls", "base_background", "background")),
        *_attrs("textual.widget", "Widget", "_styles_cache"),
    ],
}
PATHS = tuple(NEEDS)


@cache
def off_reasons() -> dict[str, str]:
    """Fast path -> why it is off, for every path that is off; worked out once a process (`recheck`)."""
    if os.environ.get(STOCK_ENV, "").strip() not in ("", "0"):
        reasons = {path: f"{STOCK_ENV} is set" for path in PATHS}
        log.info("Textual fast paths off (%s=1): stock Textual for %s", STOCK_ENV, ", ".join(PATHS))
        return reasons
    reasons = {}
    for path, needs in NEEDS.items():
        problems = [problem for need in needs if (problem := need.problem()) is not None]
        if problems:
            reasons[path] = "; ".join(problems)
    if reasons:
        import textual

        log.warning("Textual %s: fast paths off, stock Textual used instead (slower, not broken): %s",
                    getattr(textual, "__version__", "?"),
                    " | ".join(f"{path}: {why}" for path, why in reasons.items()))
    return reasons


def enabled(path: str) -> bool:
    """Whether fast path `path` (one of `PATHS`) is on: its needs hold and `LANES_TUI_STOCK` is not set."""
    if path not in NEEDS:
        raise KeyError(f"no fast path {path!r}; the fast paths are {', '.join(PATHS)}")
    return path not in off_reasons()


def recheck() -> dict[str, str]:
    """Check again (a test changed Textual or the environment); logs again if anything is off."""
    off_reasons.cache_clear()
    return off_reasons()
