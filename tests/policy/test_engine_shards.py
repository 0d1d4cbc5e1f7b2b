"""Data-parallel engine processes (``LocalConfig(engines=2)``): a wide batch split between two engines samples the
same tokens as one engine, narrow batches decode bit for bit as with one, and an engine killed while it holds its
shard fails that batch with a 503 and is replaced; a model no engine can take is served from the thread."""

from __future__ import annotations

import asyncio
import os
import signal
from typing import Any

import httpx
import pytest

from openenv_train.policy import LocalBackend, LocalConfig, PolicyServer
from tests.policy.conftest import chat_body
from tests.policy.test_engine_process import BODIES, DEADLINE_S, _alive, _answers, _until

WIDE = chat_body("tell me a story", temperature=1.0, seed=11, max_tokens=16, n=16, logprobs=True)


async def test_two_engines_split_a_wide_batch_and_sample_what_one_engine_samples(tiny: tuple[Any, Any]) -> None:
    model, tokenizer = tiny
    two = LocalBackend(model, tokenizer, config=LocalConfig(engine="process", engines=2, shard_rows=8))
    one = LocalBackend(model, tokenizer, config=LocalConfig(engine="process"))
    try:
        first, second = two.engine.engines
        assert len({os.getpid(), *two.engine.pids}) == 3
        assert await _answers(two, BODIES) == await _answers(one, BODIES)  # narrow: the first engine, bit for bit
        assert two.engine.batches_split == 0 and second.batches_started == 0
        (split,), (whole,) = await _answers(two, [WIDE]), await _answers(one, [WIDE])
        assert two.engine.batches_split == 1 and first.batches_started > 0 and second.batches_started == 1
        assert [c[:3] for c in split] == [c[:3] for c in whole]  # text, finish reason, token ids of all 16 rows
        for ours, theirs in zip(split, whole, strict=True):  # logprobs: batch width changes only the last bits
            assert ours[3] == pytest.approx(theirs[3], abs=1e-4)
    finally:
        await two.aclose()
        await one.aclose()
    assert not any(_alive(pid) for pid in two.engine.pids if pid is not None)


async def test_a_shard_whose_engine_is_killed_fails_its_batch_with_503_and_is_replaced(tiny: tuple[Any, Any]) -> None:
    model, tokenizer = tiny
    backend = LocalBackend(model, tokenizer, config=LocalConfig(engine="process", engines=2, shard_rows=4))
    second = backend.engine.engines[1]
    async with PolicyServer(backend) as server, \
            httpx.AsyncClient(base_url=server.base_url, timeout=DEADLINE_S) as client:
        pid = second.pid
        held = asyncio.ensure_future(client.post("/chat/completions", json=chat_body(
            "tell me everything", temperature=1.0, seed=1, max_tokens=3000, n=8)))
        await _until(second.decoding.is_set, "the second engine to start its shard")
        os.kill(pid, signal.SIGKILL)
        failed = await held
        assert failed.status_code == 503, failed.text
        assert failed.json()["error"]["code"] == "engine_restarted" and str(pid) in failed.text
        assert second.starts == 2 and second.pid != pid and backend.engine.starts == 3
        again = await client.post("/chat/completions", json=chat_body("hi", temperature=1.0, seed=2, max_tokens=5,
                                                                       n=8))
        assert again.status_code == 200 and len(again.json()["choices"]) == 8


def test_the_engines_setting_is_checked() -> None:
    with pytest.raises(ValueError, match="engines must be >= 1"):
        LocalConfig(engines=0)


async def test_two_engines_for_a_model_no_engine_can_take_fall_back_to_the_thread(
        tiny: tuple[Any, Any], caplog: pytest.LogCaptureFixture) -> None:
    import threading

    model, tokenizer = tiny
    model.unpicklable = threading.Lock()  # a lock does not pickle: no engine process can get this model
    try:
        backend = LocalBackend(model, tokenizer, config=LocalConfig(engines=2))
        assert backend.engine.kind == "thread" and "serving" in caplog.text
        assert (await _answers(backend, BODIES[:1]))[0][0][2]  # it still answers, from this process
        await backend.aclose()
    finally:
        del model.unpicklable
