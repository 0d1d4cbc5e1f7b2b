"""CaptureStore: sessions, order under threads and asyncio tasks, errors; build_turn and its helpers."""

from __future__ import annotations

import asyncio
import threading

import pytest

from openenv_train.trace import (
    CaptureError,
    CaptureSessionExists,
    CaptureStore,
    TrainingTurn,
    UnknownCaptureSession,
    build_turn,
    openai_logprobs,
)


def _turn(i: int) -> dict[str, object]:
    return {"prompt_token_ids": [i], "completion_token_ids": [i + 1], "loss_mask": [0, 1], "metadata": {"tag": i}}


def test_session_lifecycle_and_assigned_ids() -> None:
    store = CaptureStore()
    store.open_session("sk-abc123", metadata={"episode_id": "e1"})
    first = store.record("sk-abc123", _turn(0))
    second = store.record("sk-abc123", _turn(1))
    assert (first.node_id, first.metadata) == ("turn-0", {"tag": 0, "turn": 0})
    assert (second.node_id, second.metadata["turn"]) == ("turn-1", 1)
    assert store.metadata("sk-abc123") == {"episode_id": "e1"}
    assert [t.node_id for t in store.get("sk-abc123").turns] == ["turn-0", "turn-1"]
    assert "sk-abc123" in store and len(store) == 1
    trace = store.close_session("sk-abc123")
    assert [t.metadata["tag"] for t in trace.turns] == [0, 1]
    assert "sk-abc123" not in store
    with pytest.raises(UnknownCaptureSession) as info:
        store.record("sk-abc123", _turn(2))
    assert "sk-a" in str(info.value) and "abc123" not in str(info.value)  # the key is masked
    assert isinstance(info.value, KeyError)


def test_errors_pickle_with_their_fields() -> None:
    import pickle

    from openenv_train.trace import HubPushError, RunDirLocked

    for error in (UnknownCaptureSession("sk-secret"), CaptureSessionExists("sk-secret"), RunDirLocked("/r"),
                  HubPushError("no token", reason="no_token", rows=3)):
        again = pickle.loads(pickle.dumps(error))
        assert type(again) is type(error) and str(again) == str(error) and vars(again) == vars(error)


def test_errors() -> None:
    store = CaptureStore()
    with pytest.raises(UnknownCaptureSession):
        store.get("nope")
    with pytest.raises(UnknownCaptureSession):
        store.close_session("nope")
    with pytest.raises(ValueError):
        store.open_session("")
    store.open_session("s")
    with pytest.raises(CaptureSessionExists):
        store.open_session("s")
    given = TrainingTurn(node_id="x", metadata={"turn": 7})
    stored = store.record("s", given)
    assert stored.metadata == {"turn": 7} and stored is not given
    with pytest.raises(CaptureError, match="already recorded"):
        store.record("s", given)
    with pytest.raises(ValueError, match="loss_mask"):
        store.record("s", {"prompt_token_ids": [1], "loss_mask": [1]})
    assert len(store.get("s").turns) == 1  # a rejected turn is not kept


def test_threads_keep_call_order_per_session() -> None:
    store = CaptureStore()
    sessions = [f"s{k}" for k in range(8)]
    for s in sessions:
        store.open_session(s)
    barrier = threading.Barrier(len(sessions) * 2)

    def worker(session: str, offset: int) -> None:
        barrier.wait()
        for i in range(200):
            store.record(session, {"metadata": {"seq": offset + i}})

    threads = [threading.Thread(target=worker, args=(s, o)) for s in sessions for o in (0, 1000)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for s in sessions:
        trace = store.close_session(s)
        assert len(trace.turns) == 400
        assert [t.metadata["turn"] for t in trace.turns] == list(range(400))
        assert len({t.node_id for t in trace.turns}) == 400
        for offset in (0, 1000):  # each thread's calls keep their order
            seqs = [t.metadata["seq"] for t in trace.turns if offset <= t.metadata["seq"] < offset + 1000]
            assert seqs == list(range(offset, offset + 200))


async def test_asyncio_tasks_record_in_call_order() -> None:
    store = CaptureStore()
    store.open_session("a")
    order: list[int] = []

    async def call(i: int) -> None:
        await asyncio.sleep((i * 7 % 5) / 1000)  # finish in a scrambled order
        order.append(i)
        store.record("a", {"metadata": {"i": i}})

    await asyncio.gather(*(call(i) for i in range(50)))
    assert [t.metadata["i"] for t in store.close_session("a").turns] == order


def test_build_turn_masks_and_metadata() -> None:
    turn = build_turn(
        messages=[{"role": "user", "content": "hi"}],
        tools=[{"type": "function", "function": {"name": "f"}}],
        message={"role": "assistant", "content": "yo"},
        finish_reason="stop",
        prompt_token_ids=[5, 6, 7],
        completion_token_ids=[8, 9],
        logprobs=openai_logprobs({"content": [{"logprob": -0.2}, {"logprob": 3e-8}]}),
        sampling_requested={"temperature": 0.7},
        sampling_used={"temperature": 0.7, "top_k": 0},
        timings={"seconds": 0.1},
        model="tiny",
    )
    assert turn.loss_mask == [0, 0, 0, 1, 1]
    assert turn.per_token_logps == [-0.2, 0.0]
    assert turn.request == {"messages": [{"role": "user", "content": "hi"}],
                            "tools": [{"type": "function", "function": {"name": "f"}}]}
    assert turn.response == {"choices": [{"index": 0, "message": {"role": "assistant", "content": "yo"},
                                          "finish_reason": "stop"}]}
    assert turn.metadata["sampling_used"] == {"temperature": 0.7, "top_k": 0}
    assert turn.metadata["finish_reason"] == "stop" and turn.metadata["model"] == "tiny"
    masked = build_turn(messages=[], message={"role": "assistant", "content": ""}, prompt_token_ids=[1],
                        completion_token_ids=[2, 3, 4], completion_mask=[1, 0, 1])
    assert masked.loss_mask == [0, 1, 0, 1]
    from_choices = build_turn(messages=[], choices=[{"message": {"role": "assistant"}, "finish_reason": "length"}])
    assert from_choices.metadata["finish_reason"] == "length" and from_choices.loss_mask == []


def test_build_turn_rejects_bad_input() -> None:
    with pytest.raises(ValueError, match="1 logprobs for 2"):
        build_turn(messages=[], completion_token_ids=[1, 2], logprobs=[-0.1])
    with pytest.raises(ValueError, match="completion_mask"):
        build_turn(messages=[], completion_token_ids=[1, 2], completion_mask=[1])
    with pytest.raises(ValueError, match="not both"):
        build_turn(messages=[], choices=[], message={"role": "assistant"})
