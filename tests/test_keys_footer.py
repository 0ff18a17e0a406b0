"""The dashboard's footer (`widgets.keys_footer`): Textual's `Footer`, rebuilt only when its keys change.

Textual's own footer rebuilds a widget per key on every bindings signal of its screen (a focus move,
a `refresh_bindings`); this one compares the keys it would show with the keys it shows. Counted here
by its compose calls, on a real app driven by the pilot, beside a stock `Footer` for the same moves.
"""

from __future__ import annotations

import dataclasses
from typing import ClassVar

from textual.app import App, ComposeResult
from textual.binding import ActiveBinding, Binding, BindingType
from textual.screen import Screen
from textual.widgets import Button, Footer, Static

from lanes_tui.widgets import KeysFooter


class _Plain(Button):
    """Focusable, no keys of its own: moving between two of these changes nothing in the footer."""


class _Keyed(Button):
    BINDINGS: ClassVar[list[BindingType]] = [Binding("x", "press", "Extra")]


def _counting(base: type[Footer]) -> type[Footer]:
    class Counting(base):  # type: ignore[valid-type, misc]
        composed = 0

        def compose(self) -> ComposeResult:
            type(self).composed += 1
            yield from super().compose()

    return Counting


class _Demo(App[None]):
    BINDINGS: ClassVar[list[BindingType]] = [Binding("q", "quit", "Quit")]

    def __init__(self, footer: type[Footer]) -> None:
        super().__init__()
        self.footer_type = footer

    def compose(self) -> ComposeResult:
        yield _Plain("one", id="one")
        yield _Plain("two", id="two")
        yield _Keyed("keyed", id="keyed")
        yield Static("end")
        yield self.footer_type()


def _shown(app: App[None]) -> list[str]:
    return [f"{key.key}:{key.description}" for key in app.screen.query("FooterKey")]


async def _moves(footer: type[Footer]) -> tuple[int, int, list[str], int, list[str]]:
    """Compose counts after focus moves that keep the keys, and after one that adds a key."""
    app = _Demo(footer)
    async with app.run_test() as pilot:
        app.set_focus(app.query_one("#one"))
        await pilot.pause()
        settled = footer.composed  # type: ignore[attr-defined]
        for target in ("#two", "#one", "#two", "#one"):
            app.set_focus(app.query_one(target))
            await pilot.pause()
        same_keys = footer.composed - settled  # type: ignore[attr-defined]
        before = _shown(app)
        app.set_focus(app.query_one("#keyed"))
        await pilot.pause()
        await pilot.pause()
        return settled, same_keys, before, footer.composed, _shown(app)  # type: ignore[attr-defined]


async def test_focus_moves_that_keep_the_keys_rebuild_nothing_and_a_new_key_is_shown() -> None:
    stock = _counting(Footer)
    ours = _counting(KeysFooter)
    _, stock_rebuilds, stock_before, _, stock_after = await _moves(stock)
    settled, rebuilds, before, composed, after = await _moves(ours)
    assert stock_rebuilds >= 4  # Textual's footer rebuilds on each of the four moves
    assert rebuilds == 0  # ours: the same keys, nothing rebuilt
    assert before == stock_before and "q:Quit" in before  # and it shows what the stock footer shows
    assert composed > settled and "x:Extra" in after and after == stock_after  # a new key: rebuilt


class _Hiding(App[None]):
    """Hides `Extra` from the footer through `active_bindings`, as the dashboard's compact layout does."""

    BINDINGS: ClassVar[list[BindingType]] = [Binding("q", "quit", "Quit"), Binding("x", "bell", "Extra")]

    def get_default_screen(self) -> Screen[None]:
        return _HidingScreen()


class _HidingScreen(Screen[None]):
    hide_extra = False

    def compose(self) -> ComposeResult:
        yield Static("body")
        yield KeysFooter()

    @property
    def active_bindings(self) -> dict[str, ActiveBinding]:
        active = super().active_bindings
        if not self.hide_extra:
            return active
        return {key: ActiveBinding(found.node, dataclasses.replace(found.binding, show=False), found.enabled,
                                   found.tooltip) if found.binding.action == "bell" else found
                for key, found in active.items()}


async def test_a_key_the_screen_stops_showing_leaves_the_footer() -> None:
    """Same keys, same actions, only `show` changed (the compact layout's shorter footer): rebuilt."""
    app = _Hiding()
    async with app.run_test() as pilot:
        await pilot.pause()
        assert "x:Extra" in _shown(app)
        screen = app.screen
        assert isinstance(screen, _HidingScreen)
        screen.hide_extra = True
        screen.refresh_bindings()
        await pilot.pause()
        await pilot.pause()
        assert "x:Extra" not in _shown(app) and "q:Quit" in _shown(app)
