"""Miles: the custom agent function and reward function against Miles' contract.

``run(base_url, prompt, request_kwargs, metadata)`` is called as Miles' ``agentic_tool_call.generate`` calls it,
with ``base_url`` the root of our PolicyServer (scripted replies, tokenized, captured) and a real Wordle server
subprocess; its result merged into a sample's metadata is what ``reward_func`` reads. Where ``miles`` imports (a
venv with ``pip install miles-rl``), Miles' own ``Sample`` and ``rm_hub`` are used too.
"""

from __future__ import annotations

import importlib.util
from argparse import Namespace
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from openenv_train.core import EnvLoadError
from openenv_train.integrations.miles import (
    MilesError,
    MilesNotInstalled,
    import_miles_sample,
    make_miles_agent_function,
    reward_func,
    to_miles_sample,
)
from openenv_train.policy import PolicyServer, ScriptedBackend, build_tiny_tokenizer
from openenv_train.pool import PoolConfig
from openenv_train.trace import CaptureStore, TraceWriter, read_traces

MILES_MISSING = importlib.util.find_spec("miles") is None
needs_miles = pytest.mark.skipif(MILES_MISSING, reason="miles-rl is not installed: pip install miles-rl "
                                                       "(Miles' Sample and rm_hub import on CPU)")


def _guesses(*words: str) -> Callable[[list[dict[str, Any]]], str]:
    """A script: the n-th reply of a conversation is the n-th word (the last one repeated)."""
    def reply(messages: list[dict[str, Any]]) -> str:
        n = sum(m["role"] == "assistant" for m in messages)
        return f"[{words[min(n, len(words) - 1)]}]"
    return reply


@pytest.fixture(scope="module")
def tokenizer() -> Any:
    pytest.importorskip("tokenizers", reason="tokenizers is not installed")
    return build_tiny_tokenizer()


@pytest.fixture
async def servers(tokenizer: Any) -> AsyncIterator[tuple[str, str, CaptureStore]]:
    """Two scripted PolicyServers sharing a capture store: one wins Wordle on 'crane' in two, one never does."""
    store = CaptureStore()
    async with PolicyServer(ScriptedBackend(_guesses("slate", "crane"), tokenizer=tokenizer), capture=store,
                            token="") as win, \
            PolicyServer(ScriptedBackend(_guesses("slate"), tokenizer=tokenizer), capture=store, token="") as lose:
        yield win.url, lose.url, store


async def _play(servers: tuple[str, str, CaptureStore], tmp_path: Path,
                request_kwargs: dict[str, Any] | None = None) -> tuple[Any, list[dict[str, Any]]]:
    win, lose, store = servers
    run = make_miles_agent_function("wordle", capture=store, writer=TraceWriter(tmp_path / "run"),
                                    config=PoolConfig(num_actors=1, max_turns=8, run_id="miles"))
    kwargs = request_kwargs or {"temperature": 1.0, "top_p": 1.0, "max_tokens": 16}
    try:
        results = [await run(base_url=url, prompt=[{"role": "user", "content": "Play Wordle."}], request_kwargs=kwargs,
                             metadata={"reset": {"task": "crane"}, "seed": 5, "session_server_id": "127.0.0.1:1"})
                   for url in (win, lose)]
    finally:
        await run.aclose()
    assert run.writer is not None
    run.writer.flush()
    return run, results


@pytest.mark.timeout(180)
async def test_run_returns_the_envs_reward_and_turns(servers: tuple[str, str, CaptureStore], tmp_path: Path) -> None:
    run, (won, lost) = await _play(servers, tmp_path)
    assert (won["openenv_reward"], won["openenv_turns"], won["openenv_done"], won["openenv_ok"]) == (1.0, 2, True, True)
    # 'slate' against 'crane' (a and e green, s l t absent), then the same guess twice: a repeat is an invalid move,
    # the second invalid move in a row ends the game with the last valid guess's score, (2 + 0.5 * 0) / 5
    assert (lost["openenv_reward"], lost["openenv_turns"], lost["openenv_done"]) == (pytest.approx(0.4), 3, True)
    assert won["openenv_env"] == "wordle" and won["openenv_error"] is None
    rows = {row.trace_id: row for row in read_traces(tmp_path / "run")}
    row = rows[won["openenv_trace_id"]]
    assert row.reward == 1.0 and row.task == {"task": "crane", "seed": 5} and len(row.trace.turns) == 2
    first = row.trace.turns[0]
    assert first.completion_token_ids and first.request["messages"][0]["role"] == "user"
    assert first.metadata["sampling_requested"] == {"temperature": 1.0, "top_p": 1.0, "max_tokens": 16}
    assert "Wordle" in first.request["messages"][0]["content"]  # the env's observation, not Miles' prompt
    assert len(rows[lost["openenv_trace_id"]].trace.turns) == 3
    samples = [SimpleNamespace(metadata={"session_server_id": "x", **won}),
               SimpleNamespace(metadata={"session_server_id": "x", **lost})]
    assert await reward_func(Namespace(), samples) == [1.0, pytest.approx(0.4)]
    assert await reward_func(Namespace(), samples[0]) == 1.0


async def test_reward_func_scores_failures_and_refuses_foreign_samples() -> None:
    failed = SimpleNamespace(metadata={"openenv_reward": None, "openenv_ok": False})
    cut = SimpleNamespace(metadata={"openenv_reward": 0.7, "openenv_ok": False})
    assert await reward_func(Namespace(), [failed, cut]) == [0.0, 0.0]
    assert await reward_func(Namespace(), failed, failure_reward=-1.0) == -1.0
    with pytest.raises(MilesError, match="no 'openenv_reward'.*--custom-agent-function-path"):
        await reward_func(Namespace(), [SimpleNamespace(metadata={"rm_type": "math"})])


def test_an_unknown_env_fails_at_once_with_close_matches() -> None:
    with pytest.raises(EnvLoadError, match="no env named 'wordel'.*wordle"):
        make_miles_agent_function("wordel")


async def test_reset_metadata_must_be_a_mapping(servers: tuple[str, str, CaptureStore]) -> None:
    run = make_miles_agent_function("wordle")
    with pytest.raises(MilesError, match="metadata\\['reset'\\] must be a mapping"):
        await run(base_url=servers[0], prompt="", request_kwargs={}, metadata={"reset": "crane"})
    assert run._actor is None  # nothing was started


@pytest.mark.skipif(not MILES_MISSING, reason="miles-rl is installed here")
def test_without_miles_the_error_gives_the_install_line() -> None:
    with pytest.raises(MilesNotInstalled, match="pip install miles-rl"):
        import_miles_sample()


@needs_miles
@pytest.mark.timeout(180)
async def test_miles_sample_and_rm_hub(servers: tuple[str, str, CaptureStore], tmp_path: Path,
                                       tokenizer: Any) -> None:
    from miles.rollout.rm_hub import async_rm, batched_async_rm
    from miles.utils.types import Sample

    run, (won, lost) = await _play(servers, tmp_path)
    row = next(r for r in run.rows if r.trace_id == won["openenv_trace_id"])
    sample = to_miles_sample(row, prompt="Play Wordle.", tokenizer=tokenizer)
    assert isinstance(sample, Sample) and sample.status is Sample.Status.COMPLETED and sample.reward == 1.0
    first, second = row.trace.turns
    assert sample.tokens[: len(first.prompt_token_ids)] == first.prompt_token_ids
    assert sample.tokens == second.prompt_token_ids + second.completion_token_ids
    assert len(sample.loss_mask) == len(sample.rollout_log_probs) == sample.response_length
    assert sum(sample.loss_mask) == len(first.completion_token_ids) + len(second.completion_token_ids)
    assert "[crane]" in sample.response and sample.metadata["openenv_turns"] == 2
    # as Miles' agentic generate does: the agent's dict merged into each sample's metadata, then Miles' own rm_hub
    samples = [Sample(prompt="Play Wordle.", metadata={"session_server_id": "x", **result}) for result in (won, lost)]
    args = Namespace(custom_rm_path="openenv_train.integrations.miles.reward_func", rm_type=None)
    assert await batched_async_rm(args, samples) == [1.0, pytest.approx(0.4)]
    assert await async_rm(args, samples[1]) == pytest.approx(0.4)
    await batched_async_rm(args, samples, inplace_set_reward_field=True)
    assert [s.reward for s in samples] == [1.0, pytest.approx(0.4)]


@needs_miles
@pytest.mark.timeout(180)
async def test_miles_own_request_kwargs(servers: tuple[str, str, CaptureStore], tmp_path: Path) -> None:
    try:
        from miles.rollout.generate_hub.agentic_tool_call import build_chat_request_kwargs
    except ImportError as exc:  # its bundled sglang imports IPython and openai, which miles-rl does not declare
        pytest.skip(f"miles' agentic_tool_call does not import here: {exc}; pip install ipython openai")
    kwargs = build_chat_request_kwargs({"temperature": 1.0, "top_p": 1.0, "max_new_tokens": 16, "sampling_seed": 3,
                                        "skip_special_tokens": False})
    assert kwargs["max_tokens"] == 16 and kwargs["seed"] == 3
    run, (won, _) = await _play(servers, tmp_path, request_kwargs=kwargs)
    assert won["openenv_reward"] == 1.0
    turn = next(r for r in run.rows if r.trace_id == won["openenv_trace_id"]).trace.turns[0]
    # Miles' sampling fields reached the endpoint under their OpenAI names
    assert turn.metadata["sampling_requested"] == {"temperature": 1.0, "top_p": 1.0, "max_tokens": 16, "seed": 3}


@pytest.mark.timeout(300)
async def test_run_with_the_tiny_local_model(tmp_path: Path) -> None:
    """A sampled (not scripted) policy: every turn captured with its token ids and logprobs; a Miles sample of it
    where miles imports."""
    pytest.importorskip("torch", reason="torch is not installed")
    from openenv_train.policy import LocalBackend, build_tiny_model

    store = CaptureStore()
    run = make_miles_agent_function("wordle", capture=store, config=PoolConfig(num_actors=1, max_turns=2, run_id="tiny"))
    async with PolicyServer(LocalBackend(str(build_tiny_model(tmp_path / "tiny", seed=0))), capture=store,
                            token="") as server:
        try:
            result = await run(base_url=server.url, prompt="", metadata={"reset": {"task": "crane"}, "seed": 1},
                               request_kwargs={"temperature": 1.0, "max_tokens": 8, "seed": 1})
        finally:
            await run.aclose()
    row = run.rows[-1]
    assert result["openenv_ok"] and result["openenv_trace_id"] == row.trace_id
    assert result["openenv_turns"] == len(row.trace.turns) >= 1 and result["openenv_reward"] == row.reward
    for turn in row.trace.turns:
        assert 0 < len(turn.completion_token_ids) <= 8 == turn.metadata["sampling_requested"]["max_tokens"]
        assert len(turn.per_token_logps) == len(turn.completion_token_ids)
        assert all(lp <= 0.0 for lp in turn.per_token_logps) and any(lp < 0.0 for lp in turn.per_token_logps)
    assert await reward_func(Namespace(), SimpleNamespace(metadata=result)) == (row.reward or 0.0)
    if not MILES_MISSING:
        from openenv_train.integrations import flatten_turns

        sample, flat = to_miles_sample(row), flatten_turns(row.trace.turns)
        assert (sample.rollout_log_probs, sample.loss_mask) == (flat.logprobs, flat.env_mask)
        sampled = [lp for lp, mask in zip(sample.rollout_log_probs, sample.loss_mask, strict=True) if mask]
        assert sampled == [lp for t in row.trace.turns[: flat.turns_used] for lp in t.per_token_logps]
