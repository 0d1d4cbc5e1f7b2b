"""Trace rows of real episodes, played in-process (no server): Wordle by its solver or by given guesses."""

from __future__ import annotations

from typing import Any

from openenv_train.envs.wordle import WordleAction, WordleEnvironment, WordleSolver
from openenv_train.trace import EnvInfo, EnvStep, TraceRow, TrainingTrace, build_turn


def wordle_row(secret: str = "crane", messages: list[str] | None = None, **fields: Any) -> TraceRow:
    """A Wordle episode as a row: the solver's game, or ``messages`` sent in order (until the game ends)."""
    env, solver = WordleEnvironment(), WordleSolver()
    obs = env.reset(task=secret)
    steps: list[EnvStep] = []
    turns = []
    for i in range(20):
        if obs.done or (messages is not None and i >= len(messages)):
            break
        action = {"message": messages[i]} if messages is not None else solver.act(obs)
        turns.append(build_turn(messages=[{"role": "user", "content": obs.prompt or "Wordle"}],
                                message={"role": "assistant", "content": action["message"]}, node_id=f"t{i}"))
        obs = env.step(WordleAction(message=action["message"]))
        steps.append(EnvStep(action=action, observation=obs.model_dump(mode="json"), reward=obs.reward, done=obs.done))
    fields.setdefault("episode_id", secret)
    return TraceRow(run_id="r", env=EnvInfo(name="wordle"), task={"secret": secret},
                    reward=steps[-1].reward if steps else None, done=bool(steps and steps[-1].done), steps=steps,
                    trace=TrainingTrace(turns=turns), **fields)
