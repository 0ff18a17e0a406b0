"""The dashboard's way to a decision: the same `Decisions` method, run off the dashboard's loop.

Decisions do blocking git work and may wait on locks, so each runs on its own event loop in a
worker thread (`_offload`): the dashboard's loop never stalls behind an accept. `offloaded(method)`
makes an `Engine` attribute of a `Decisions` method with the method's own signature, so the
dashboard calls `engine.accept(lane_id, override_review=...)` exactly as the command line calls
`Decisions.accept`: one signature, written once. After a decision that changes something, the host
is told (`after_decision`: reconcile, rescan, re-read the inbox) whether it succeeded or not.
Refusals arrive as LanesError, which the app shows as a notification with its reason.
"""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Awaitable, Callable
from typing import Any, Concatenate, Generic, ParamSpec, Protocol, TypeVar, overload

from lanes_tui.engine.decisions.api import Decisions

__all__ = ["DecisionHost", "offloaded"]

P = ParamSpec("P")
T = TypeVar("T")


async def _offload(factory: Callable[[], Awaitable[T]]) -> T:
    """Run a coroutine on a fresh loop in a worker thread."""

    def runner() -> T:
        async def main() -> T:
            return await factory()

        return asyncio.run(main())

    return await asyncio.to_thread(runner)


class DecisionHost(Protocol):
    """What an offloaded decision needs of the object it is read from (the `Engine`)."""

    @property
    def decisions(self) -> Decisions: ...

    async def after_decision(self, name: str) -> None: ...


class offloaded(Generic[P, T]):
    """`accept = offloaded(Decisions.accept)` in a class whose instances are `DecisionHost`s.

    `refresh=False`: the decision only reads (a plan, a report), so nothing is rescanned after it."""

    def __init__(self, method: Callable[Concatenate[Decisions, P], Awaitable[T]], *, refresh: bool = True) -> None:
        self.method = method
        self.refresh = refresh
        self.name = method.__name__
        # what `help()` and the tests see: the method's own signature, without its `self`
        signature = inspect.signature(method)
        self.signature = signature.replace(parameters=list(signature.parameters.values())[1:])

    @overload
    def __get__(self, host: None, owner: type[Any] | None = None) -> offloaded[P, T]: ...

    @overload
    def __get__(self, host: DecisionHost, owner: type[Any] | None = None) -> Callable[P, Awaitable[T]]: ...

    def __get__(self, host: DecisionHost | None,
                owner: type[Any] | None = None) -> offloaded[P, T] | Callable[P, Awaitable[T]]:
        if host is None:
            return self
        method, refresh, name = self.method, self.refresh, self.name

        async def call(*args: P.args, **kwargs: P.kwargs) -> T:
            decisions = host.decisions
            try:
                return await _offload(lambda: method(decisions, *args, **kwargs))
            finally:
                if refresh:
                    await host.after_decision(name)

        call.__name__, call.__qualname__, call.__doc__ = name, f"offloaded {method.__qualname__}", method.__doc__
        call.__signature__ = self.signature  # type: ignore[attr-defined]
        return call
