"""The runner contract (`tests/runner_contract.py`) kept by `LocalRunner`: real sim lanes, a real repository."""

from __future__ import annotations

from pathlib import Path

from lanes_tui.engine.config.settings import load_config
from lanes_tui.engine.decisions.runners import LocalRunner
from tests.runner_contract import (
    RunnerWorld,
    contract_lifecycle,
    contract_refuses_ids_that_are_not_lanes,
    write_contract_config,
)


def _world(repo: Path) -> RunnerWorld:
    write_contract_config(repo)
    return RunnerWorld(repo=repo, make=lambda: LocalRunner(repo, load_config(repo)))


async def test_local_runner_keeps_the_lifecycle_contract(repo: Path) -> None:
    await contract_lifecycle(_world(repo))


async def test_local_runner_refuses_ids_that_are_not_lanes(repo: Path) -> None:
    await contract_refuses_ids_that_are_not_lanes(_world(repo))
