"""Policies and envs the pool tests ship to Ray actors (pickled by value: workers need not import tests)."""

from __future__ import annotations

import asyncio
from typing import Any

from openenv_train.envs.wordle.solver import WordleSolver

_SOLVER = WordleSolver()


def solver(observation: Any) -> dict[str, str]:
    """The Wordle expert."""
    return _SOLVER.act(observation)


async def slow_solver(observation: Any) -> dict[str, str]:
    """The Wordle expert, thinking 50 ms per guess (so a batch is still running when a test breaks things)."""
    await asyncio.sleep(0.05)
    return _SOLVER.act(observation)


def held_on_marked_nodes(folder: str) -> Any:
    """:func:`slow_solver` that stops answering on a node once ``folder/<node id>`` exists: the episodes in flight
    there stay in flight until the node dies, so its death must fail them (the nodes share one file system)."""

    async def policy(observation: Any) -> dict[str, str]:
        import os

        import ray

        mark = os.path.join(folder, ray.get_runtime_context().get_node_id())
        while os.path.exists(mark):
            await asyncio.sleep(0.05)
        return await slow_solver(observation)

    return policy


def held_while_marked(folder: str) -> Any:
    """:func:`slow_solver` that, while ``folder/hold`` exists, writes one file in ``folder/calls`` per call and
    waits: an episode in flight stops at its next guess, so a test counts the episodes in flight from the files
    and changes what it tests before it lets them go on (by removing ``hold``)."""

    async def policy(observation: Any) -> dict[str, str]:
        import os
        import uuid

        hold = os.path.join(folder, "hold")
        if os.path.exists(hold):
            open(os.path.join(folder, "calls", uuid.uuid4().hex), "w").close()
            while os.path.exists(hold):
                await asyncio.sleep(0.05)
        return await slow_solver(observation)

    return policy


async def stuck(observation: Any) -> dict[str, str]:
    """A policy that never answers in time."""
    await asyncio.sleep(30)
    return {"message": "[crane]"}


def broken(observation: Any) -> dict[str, str]:
    """A policy with a bug."""
    raise RuntimeError("policy bug")


def actor_ready(ray: Any, actor: Any, timeout_s: float = 300.0) -> dict[str, Any]:
    """``actor.ready()`` (starting its env server if it died), waiting out a Ray restart of the actor itself.

    A call to an actor that Ray is restarting fails at once with ``ActorUnavailableError``; on a busy machine the
    restart takes a while, so ask again until ``timeout_s``.
    """
    import time

    deadline = time.monotonic() + timeout_s
    while True:
        try:
            return dict(ray.get(actor.ready.remote(), timeout=max(1.0, deadline - time.monotonic())))
        except ray.exceptions.ActorUnavailableError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.2)
