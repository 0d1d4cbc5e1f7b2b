"""ART: real art.Trajectory/TrajectoryGroup objects from captured rows, and the rollout helper in ART's gather loop.

The ART model is a real ``art.TrainableModel`` (no backend) whose inference endpoint is our PolicyServer over
the tiny offline model, capturing every call; the env is a real Wordle server subprocess.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import pytest

from openenv_train.integrations import flatten_turns
from openenv_train.integrations.art import ArtRolloutError, import_art, make_art_rollout, to_art_groups
from openenv_train.pool import PoolConfig
from openenv_train.trace import CaptureStore, TraceWriter, read_traces
from tests.integrations._art import ART_MISSING

pytestmark = pytest.mark.skipif(ART_MISSING,
                                reason="openpipe-art is not installed: pip install 'openpipe-art==0.5.18' "
                                       "(the base package; ART tests need it)")


@pytest.fixture(scope="module")
def tiny(tmp_path_factory: pytest.TempPathFactory) -> tuple[Any, Any]:
    pytest.importorskip("torch", reason="torch is not installed")
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from openenv_train.policy import build_tiny_model

    path = build_tiny_model(tmp_path_factory.mktemp("tiny"), seed=0)
    return AutoModelForCausalLM.from_pretrained(path).eval(), AutoTokenizer.from_pretrained(path)


def _art_model(base_url: str) -> Any:
    art = import_art()  # offline: ART's LiteLLM would fetch a price map at import

    model = art.TrainableModel(name="tiny-art", project="openenv-train-tests", base_model="tiny")
    model.inference_base_url, model.inference_api_key, model.inference_model_name = base_url, "EMPTY", "tiny"
    return model


def _choice_ids(choice: Any) -> list[int]:
    return [int(t.token.split(":")[1]) for t in choice.logprobs.content]


@pytest.mark.timeout(180)
async def test_rollout_in_art_gather_with_capture(tiny: tuple[Any, Any], tmp_path: Path) -> None:
    art = import_art()
    from art.preprocessing.tokenize import tokenize_trajectory
    from art.trajectories import History
    from openai.types.chat.chat_completion import Choice

    from openenv_train.policy import LocalBackend, PolicyServer

    store, writer = CaptureStore(), TraceWriter(tmp_path / "run")
    config = PoolConfig(num_actors=1, max_turns=2, run_id="art")
    rollout = make_art_rollout("wordle", capture=store, config=config, writer=writer,
                               sampling={"max_tokens": 6, "temperature": 1.0})
    plain = make_art_rollout("wordle", config=config, sampling={"max_tokens": 6})
    model_obj, tokenizer = tiny
    async with PolicyServer(LocalBackend(model_obj, tokenizer, model_id="tiny"), capture=store) as server:
        model = _art_model(server.base_url)
        try:
            groups = await art.gather_trajectory_groups(
                [art.TrajectoryGroup(rollout(model, {"task": w, "group_id": w}) for _ in range(2))
                 for w in ("crane", "moist")], pbar_desc=None)
            bad = await art.gather_trajectory_groups(
                [art.TrajectoryGroup([rollout(model, {"task": "zzzzz"})])], pbar_desc=None, max_exceptions=1)
            uncaptured = await plain(model, {"task": "crane"})
        finally:
            await rollout.aclose()
            await plain.aclose()
    writer.close()

    rows = {r.episode_id: r for r in rollout.rows}
    assert len(groups) == 2 and [len(g.trajectories) for g in groups] == [2, 2]
    written = {r.episode_id: r for r in read_traces(tmp_path / "run")}
    assert set(written) == set(rows)  # the failed episode is written too, as a failed row
    for group, word in zip(groups, ("crane", "moist"), strict=True):
        for trajectory in group.trajectories:
            row = rows[str(trajectory.metadata["episode_id"])]
            assert row.ok and row.rollout_type == "train" and row.task == {"task": word}
            assert trajectory.reward == float(row.reward or 0.0) and trajectory.metadata["group_id"] == word
            choices = [m for m in trajectory.messages_and_choices if isinstance(m, Choice)]
            assert len(choices) == len(row.trace.turns) >= 1 and trajectory.metrics["turns"] == len(row.trace.turns)
            for choice, turn in zip(choices, row.trace.turns, strict=True):
                assert _choice_ids(choice) == turn.completion_token_ids
                assert [t.logprob for t in choice.logprobs.content] == turn.per_token_logps
            # ART's own tokenizer trains on exactly the sampled tokens, with their logprobs
            result = tokenize_trajectory(tokenizer, None, History(messages_and_choices=trajectory.messages_and_choices,
                                         tools=trajectory.tools), 1.0, False, trajectory)
            assert result is not None
            trained = [t for t, m in zip(result.token_ids, result.assistant_mask, strict=True) if m]
            flat = flatten_turns(row.trace.turns)
            assert trained == [t for t, m in zip(flat.completion_ids, flat.env_mask, strict=True) if m]
            lps = [lp for lp, m in zip(result.logprobs, result.assistant_mask, strict=True) if m]
            assert all(math.isfinite(lp) for lp in lps)

    # the failed episode reaches ART as the group's exception, with our error in it
    failed = [r for r in rollout.rows if not r.ok]
    assert len(failed) == 1 and failed[0].error is not None and "invalid reset options" in failed[0].error.message
    assert len(bad) == 1 and bad[0].trajectories == [], bad
    assert "ArtRolloutError" in bad[0].exceptions[0].type and "invalid reset options" in bad[0].exceptions[0].message

    # without a capture store the OpenAI Choices come back as the model's client returned them
    assert plain.rows[0].trace.turns == [] and plain.rows[0].ok
    calls = [m for m in uncaptured.messages_and_choices if isinstance(m, Choice)]
    assert len(calls) == len(plain.rows[0].steps) >= 1 and calls[0].logprobs is not None
    assert uncaptured.reward == float(plain.rows[0].reward or 0.0)


def test_groups_from_captured_rows_and_failed_rows(tmp_path: Path) -> None:
    from openai.types.chat.chat_completion import Choice

    from openenv_train.trace import EnvInfo, ErrorInfo, TraceRow, TrainingTrace, TrainingTurn

    turns = [TrainingTurn(node_id="a", prompt_token_ids=[1, 2], completion_token_ids=[3, 4], per_token_logps=[-0.1, -0.2],
                          request={"messages": [{"role": "user", "content": "go"}]},
                          response={"choices": [{"message": {"role": "assistant", "content": "x"},
                                                 "finish_reason": "stop"}]}),
             TrainingTurn(node_id="b", prompt_token_ids=[9], completion_token_ids=[5], per_token_logps=[-0.3],
                          request={"messages": [{"role": "user", "content": "again"}]},  # a fresh context
                          response={"choices": [{"message": {"role": "assistant", "content": "",
                                                             "tool_calls": [{"type": "function", "function": {
                                                                 "name": "add", "arguments": {"a": 1}}}]},
                                                 "finish_reason": "tool_calls"}]})]
    ok = TraceRow(env=EnvInfo(name="t"), group_id="g", reward=0.5, trace=TrainingTrace(turns=turns))
    failed = TraceRow(env=EnvInfo(name="t"), group_id="g", ok=False, error=ErrorInfo(type="Boom", message="env died"))
    (group,) = to_art_groups([ok, failed])
    (trajectory,) = group.trajectories
    assert group.metadata == {"group_id": "g"} and "Boom: env died" in group.exceptions[0].message
    first = trajectory.messages_and_choices
    assert first[0] == {"role": "user", "content": "go"} and isinstance(first[1], Choice)
    assert _choice_ids(first[1]) == [3, 4] and first[1].finish_reason == "stop"
    (extra,) = trajectory.additional_histories  # the second turn did not extend the first: its own history
    call = extra.messages_and_choices[1]
    assert call.message.tool_calls[0].function.arguments == '{"a": 1}' and _choice_ids(call) == [5]
    plain = to_art_groups([ok], trainable=False)[0].trajectories[0]
    assert not any(isinstance(m, Choice) for m in plain.messages_and_choices)


def test_each_line_of_the_call_graph_is_a_history() -> None:
    """A side call and a retry are histories of their own; the retry's history starts with the call it forks from
    as a plain message (its sampled tokens are trained on in the main line's history only)."""
    from openai.types.chat.chat_completion import Choice

    from openenv_train.integrations.art import to_art_trajectory
    from openenv_train.trace import EnvInfo, TraceRow, TrainingTrace, TrainingTurn

    def turn(node_id: str, prompt: list[int], completion: list[int], messages: list[str], reply: str) -> TrainingTurn:
        return TrainingTurn(node_id=node_id, prompt_token_ids=prompt, completion_token_ids=completion,
                            per_token_logps=[-0.1] * len(completion),
                            request={"messages": [{"role": "user", "content": m} for m in messages]},
                            response={"choices": [{"message": {"role": "assistant", "content": reply},
                                                   "finish_reason": "stop"}]})

    turns = [turn("a", [1, 2], [3], ["go"], "x"), turn("title", [1, 9], [4], ["name it"], "Title"),
             turn("b", [1, 2, 3, 5], [6], ["go", "more"], "y"), turn("retry", [1, 2, 3, 5], [7], ["go", "more"], "z")]
    trajectory = to_art_trajectory(TraceRow(env=EnvInfo(name="t"), trace=TrainingTrace(turns=turns)))
    main = trajectory.messages_and_choices
    assert [m if isinstance(m, dict) else _choice_ids(m) for m in main] == [
        {"role": "user", "content": "go"}, [3], {"role": "user", "content": "more"}, [6]]
    title, retry = (h.messages_and_choices for h in trajectory.additional_histories)
    assert title[0] == {"role": "user", "content": "name it"} and _choice_ids(title[1]) == [4]
    assert retry[1] == {"role": "assistant", "content": "x"} and not isinstance(retry[1], Choice)
    assert _choice_ids(retry[3]) == [7]


def test_a_failed_episode_raises_with_its_row() -> None:
    from openenv_train.trace import EnvInfo, ErrorInfo, TraceRow

    row = TraceRow(env=EnvInfo(name="wordle"), episode_id="e1", ok=False, error=ErrorInfo(type="X", message="y"))
    assert "episode e1 on wordle failed: X: y" in str(ArtRolloutError(row))
