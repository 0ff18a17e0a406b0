"""The command palette: every dashboard action, by name, for the lead who forgot the key."""

from __future__ import annotations

from functools import partial

from textual.command import DiscoveryHit, Hit, Hits, Provider

from lanes_tui.app.dashboard.keys import KEYS


class DashboardCommands(Provider):
    async def discover(self) -> Hits:
        for key in KEYS:
            if key.id in ("next_pane", "quit"):
                continue
            yield DiscoveryHit(key.description, partial(self._run, key.action), help=key.help)

    async def search(self, query: str) -> Hits:
        matcher = self.matcher(query)
        for key in KEYS:
            score = matcher.match(f"{key.description} {key.help}")
            if score > 0:
                yield Hit(score, matcher.highlight(key.description), partial(self._run, key.action), help=key.help)

    async def _run(self, action: str) -> None:
        await self.screen.run_action(action)
