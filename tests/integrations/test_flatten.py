"""Property tests: random multi-turn traces flatten to aligned token, logprob and mask lists."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from openenv_train.integrations import flatten_turns
from openenv_train.integrations.trl import rollout_fields
from openenv_train.trace import EnvInfo, ErrorInfo, TraceRow, TrainingTrace, TrainingTurn

ids = st.lists(st.integers(0, 1000), max_size=6)


@st.composite
def episodes(draw: st.DrawFn) -> tuple[list[TrainingTurn], list[list[int]], list[list[int]]]:
    """Turns built like the policy endpoint builds them: each prompt extends the last prompt + completion."""
    prompt = draw(st.lists(st.integers(0, 1000), min_size=1, max_size=6))
    turns, completions, envs = [], [], []
    for n in range(draw(st.integers(1, 5))):
        if n:
            env = draw(ids)
            envs.append(env)
            prompt = prompt + completions[-1] + env
        completion = draw(ids)
        logps = [-float(i % 5) for i in range(len(completion))]
        turns.append(TrainingTurn(node_id=f"t{n}", prompt_token_ids=prompt, completion_token_ids=completion,
                                  per_token_logps=logps))
        completions.append(completion)
    return turns, completions, envs


@given(episodes())
@settings(max_examples=200, deadline=None)
def test_flattened_lengths_align_and_mask_marks_model_tokens(case: tuple) -> None:
    turns, completions, envs = case
    flat = flatten_turns(turns)
    assert flat.turns_used == len(turns)
    assert flat.prompt_ids == turns[0].prompt_token_ids
    assert len(flat.completion_ids) == len(flat.logprobs) == len(flat.env_mask)
    model = [t for t, m in zip(flat.completion_ids, flat.env_mask, strict=True) if m == 1]
    env = [t for t, m in zip(flat.completion_ids, flat.env_mask, strict=True) if m == 0]
    assert model == [t for c in completions for t in c]
    assert env == [t for e in envs for t in e]
    assert sum(flat.env_mask) == sum(len(c) for c in completions)
    # the whole sequence is exactly the last turn's prompt plus its completion
    assert flat.prompt_ids + flat.completion_ids == turns[-1].prompt_token_ids + turns[-1].completion_token_ids
    assert all(lp == 0.0 for lp, m in zip(flat.logprobs, flat.env_mask, strict=True) if m == 0)


@given(episodes(), st.lists(st.integers(0, 9), min_size=1, max_size=3))
@settings(max_examples=50, deadline=None)
def test_a_rewritten_history_stops_the_flattening(case: tuple, junk: list[int]) -> None:
    turns, _, _ = case
    bad = TrainingTurn(node_id="x", prompt_token_ids=[99999, *junk], completion_token_ids=[5], per_token_logps=[-1.0])
    flat = flatten_turns([*turns, bad])
    assert flat.turns_used == len(turns)
    assert flat.prompt_ids + flat.completion_ids == turns[-1].prompt_token_ids + turns[-1].completion_token_ids


@given(st.lists(episodes(), min_size=1, max_size=4))
@settings(max_examples=50, deadline=None)
def test_rollout_fields_are_aligned_per_item(cases: list[tuple]) -> None:
    rows = [TraceRow(env=EnvInfo(name="t"), episode_id=f"e{i}", reward=float(i), rewards={"env": float(i)},
                     trace=TrainingTrace(turns=turns)) for i, (turns, _, _) in enumerate(cases)]
    rows.append(TraceRow(env=EnvInfo(name="t"), episode_id="empty", ok=False,
                         error=ErrorInfo(type="EnvDown", message="no session")))  # failed before the model spoke
    out = rollout_fields(rows, pad_id=0, fallback_prompt_ids=[[7]] * len(rows))
    assert all(len(v) == len(rows) for v in out.values())
    for c, lp, m in zip(out["completion_ids"], out["logprobs"], out["env_mask"], strict=True):
        assert len(c) == len(lp) == len(m) >= 1
    assert out["reward_env"] == [float(i) for i in range(len(cases))] + [None]
    assert out["completion_ids"][-1] == [0] and out["env_mask"][-1] == [0] and out["prompt_ids"][-1] == [7]
