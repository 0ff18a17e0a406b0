"""The footer of the dashboard: Textual's `Footer`, rebuilt only when the keys it shows change.

Textual's `Footer` recomposes (a widget per key, each styled) on every bindings signal of its screen:
at start-up that is three times over the same twelve keys, two of them before the first frame
can be drawn (docs/benchmarks.md B7), and later every focus move between panes with the same keys.
This one compares what it would show (the key, its label, its action, whether it is shown and enabled)
with what it shows, and leaves itself alone when they agree. A screen that hides keys by `show` in its
`active_bindings` (the compact layout's shorter footer) changes what it would show.
"""

from __future__ import annotations

from typing import Any

from textual.screen import Screen
from textual.widgets import Footer

KeysShown = tuple[tuple[Any, ...], ...]


def keys_shown(screen: Screen[Any]) -> KeysShown:
    """What a `Footer` on `screen` shows, in its order: enough to tell whether its keys changed."""
    app = screen.app
    return tuple((binding.key, app.get_key_display(binding), binding.description, binding.action,
                  binding.group, binding.show, enabled, tooltip)
                 for (_node, binding, enabled, tooltip) in screen.active_bindings.values())


class KeysFooter(Footer):
    """A `Footer` that recomposes only when the keys it would show differ from the ones it shows."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self._shown: KeysShown | None = None

    def bindings_changed(self, screen: Screen[Any]) -> None:
        if self.is_attached and screen is self.screen and self.app.app_focus:
            shown = keys_shown(screen)
            if shown == self._shown:
                return  # the same keys: the footer on screen is already right
            self._shown = shown
        super().bindings_changed(screen)
