"""What the dashboard's screens need of the App that hosts them, as a protocol.

The screen and its decision flows reach the engine and the bridge through `self.app`; naming that
as a protocol (instead of importing `LanesApp`) keeps `dashboard → screen → flows` one-way.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol, runtime_checkable

from lanes_tui.engine import Config, FirstLook

if TYPE_CHECKING:
    from lanes_tui.app.dashboard.bridge import EngineBridge  # built with the engine, after the first frame
    from lanes_tui.engine import Engine  # imported after the first frame (`app.LanesApp`)


@runtime_checkable
class DashboardHost(Protocol):
    """The App a dashboard screen runs in (`LanesApp` is the one implementation)."""

    config: Config
    first_look: FirstLook | None
    """While not None, the engine is not up yet: the screen shows this picture from disk."""

    @property
    def engine(self) -> Engine: ...

    @property
    def bridge(self) -> EngineBridge: ...
