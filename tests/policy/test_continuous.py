"""Continuous batching: batches that join a running decode sample what each samples alone (seeded, greedy, top-p,
constrained, stop strings, the prefix cache's second turns), an earlier batch's end frees its lanes for the rest,
batches of another policy version wait, and through the engine process a short request that arrives while a long
one decodes is answered first; a killed engine fails every batch it held with 503."""

from __future__ import annotations

import asyncio
import dataclasses
import os
import signal
import time
from typing import Any

import httpx
import pytest

from openenv_train.policy import Constraint, LocalBackend, LocalConfig, PolicyServer, SamplingParams, parse_chat_request
from tests.policy.conftest import chat_body

DEADLINE_S = 120.0
WORDS = ("crane", "slate", "trace", "crate", "stare", "audio")


def _rows(tokenizer: Any, prompts: list[str], seed: int, max_new: int) -> list[Any]:
    from openenv_train.policy._engine.generation import Row
    from openenv_train.policy._engine.guide import GuideCache

    choice = GuideCache(tokenizer, int(tokenizer.eos_token_id)).get(Constraint(choices=WORDS))
    cases: list[tuple[dict[str, Any], Any]] = [({"temperature": 1.0}, None), ({"temperature": 0.0}, None),
                                               ({"temperature": 1.0}, choice), ({"temperature": 0.8, "top_p": 0.9}, None),
                                               ({"temperature": 1.0, "stop": ["e"]}, None)]
    eos = frozenset({int(tokenizer.eos_token_id)})
    rows = []
    for i, prompt in enumerate(prompts):
        params, guide = cases[i % len(cases)]
        ids = tokenizer.apply_chat_template([{"role": "user", "content": prompt}], add_generation_prompt=True,
                                            tokenize=True, return_dict=False)
        rows.append(Row(list(ids), SamplingParams(**params), max_new - i % 3, seed + i, eos, guide))
    return rows


def _same(alone: list[Any], joined: list[Any]) -> None:
    for a, b in zip(alone, joined, strict=True):
        assert (a.token_ids, a.text, a.finish_reason, a.error) == (b.token_ids, b.text, b.finish_reason, b.error)
        assert b.logprobs == pytest.approx(a.logprobs, rel=1e-5, abs=1e-5)


def test_batches_that_join_a_running_decode_sample_what_each_samples_alone(tiny: tuple[Any, Any]) -> None:
    from openenv_train.policy._engine.continuous import ContinuousDecode
    from openenv_train.policy._engine.generation import generate_rows

    model, tokenizer = tiny
    batches = {"a": _rows(tokenizer, ["hi", "what is 2 + 3?", "yes", "pick a word", "count"], 10, 14),
               "b": _rows(tokenizer, ["Tell me about the chess board and the knight on it", "no"], 20, 30),
               "c": _rows(tokenizer, ["a", "play a word game with me", "guess", "xyz", "more", "last one"], 30, 20)}
    alone = {key: generate_rows(model, tokenizer, rows, pad_id=int(tokenizer.pad_token_id))
             for key, rows in batches.items()}
    decode = ContinuousDecode(model, tokenizer, int(tokenizer.pad_token_id))
    joined: dict[str, Any] = {}
    order: list[str] = []
    early: list[tuple[str, int, Any]] = []  # rows that ended before the rest of their batch
    decode.add([("a", batches["a"], None)])
    for step in range(200):
        if step == 3:
            decode.add([("b", batches["b"], None)])
        if step == 7:
            decode.add([("c", batches["c"][:2], None), ("d", batches["c"][2:], None)])  # two batches, one group
            assert len(decode.groups) == 3  # all four decode in one forward pass from here
        for ended in decode.step():
            if ended.rows is None:
                joined[ended.key] = ended.outputs
                order.append(ended.key)
            else:  # rows that ended before the rest of their batch are handed over at once
                early.extend((ended.key, i, out) for i, out in zip(ended.rows, ended.outputs, strict=True))
        if decode.idle and step > 7:
            break
    assert order[0] == "a" and set(order) == {"a", "b", "c", "d"}  # a ended first: its lanes went to the others
    _same(alone["a"], joined["a"])
    _same(alone["b"], joined["b"])
    _same(alone["c"], joined["c"] + joined["d"])  # a seeded row samples the same tokens in any company
    assert len(early) >= 4
    for key, i, out in early:
        _same([alone["c"][i + 2] if key == "d" else alone[key][i]], [out])


def test_a_second_turn_that_joins_reuses_the_first_turns_keys(tiny: tuple[Any, Any]) -> None:
    from openenv_train.policy._engine.continuous import ContinuousDecode
    from openenv_train.policy._engine.generation import generate_rows
    from openenv_train.policy._engine.prefix_cache import PrefixCache

    model, tokenizer = tiny
    pad = int(tokenizer.pad_token_id)
    cache = PrefixCache(64 << 20)
    decode = ContinuousDecode(model, tokenizer, pad, cache)
    first = _rows(tokenizer, ["hi there", "tell me a story"], 1, 10)
    decode.add([(1, first, None)])
    outputs = None
    while outputs is None:
        outputs = next((e.outputs for e in decode.step() if e.rows is None), None)
    second = [dataclasses.replace(row, prompt=row.prompt + out.token_ids[:-1] + [5, 6, 7])
              for row, out in zip(first, outputs, strict=True)]
    decode.add([(2, second, None)])
    decode.add([(3, _rows(tokenizer, ["a new conversation"], 3, 12), None)])
    joined = {}
    while not decode.idle:
        joined.update({e.key: e.outputs for e in decode.step() if e.rows is None})
    assert cache.hits == 2 and cache.reused_tokens > 0
    _same(generate_rows(model, tokenizer, second, pad_id=pad), joined[2])


def test_a_batch_of_another_policy_version_waits_for_the_running_ones(tiny: tuple[Any, Any]) -> None:
    from openenv_train.policy._engine.continuous import ContinuousDecode

    model, tokenizer = tiny
    decode = ContinuousDecode(model, tokenizer, int(tokenizer.pad_token_id))
    decode.add([("old", _rows(tokenizer, ["hi"], 1, 6), None)], version=1)
    assert decode.admits(1) and not decode.admits(2)
    with pytest.raises(ValueError, match="version 2"):
        decode.add([("new", _rows(tokenizer, ["hi"], 1, 6), None)], version=2)
    while not decode.idle:
        decode.step()
    assert decode.admits(2)


async def _until(condition: Any, what: str) -> None:
    deadline = time.monotonic() + DEADLINE_S
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        await asyncio.sleep(0.01)


async def test_a_short_request_that_arrives_mid_decode_is_answered_before_the_long_one(
        tiny: tuple[Any, Any]) -> None:
    model, tokenizer = tiny
    backend = LocalBackend(model, tokenizer, config=LocalConfig(engine="process", continuous=True))
    here = LocalBackend(model, tokenizer, config=LocalConfig(engine="thread"))
    long = chat_body("tell me everything", temperature=1.0, seed=1, max_tokens=400)
    short = chat_body("pick one", temperature=1.0, seed=2, max_tokens=8, guided_choice=list(WORDS))
    try:
        held = asyncio.ensure_future(backend.chat(parse_chat_request(long)))
        await _until(backend.engine.decoding.is_set, "the engine to start decoding")
        quick = await backend.chat(parse_chat_request(short))
        assert not held.done()  # it joined: a batch at a time, it would have waited for the 400 tokens
        slow = await held
        for got, body in ((quick, short), (slow, long)):
            want = (await here.chat(parse_chat_request(body))).choices[0]
            assert got.choices[0].token_ids == want.token_ids
            assert got.choices[0].logprobs == pytest.approx(want.logprobs, rel=1e-5, abs=1e-5)
    finally:
        await backend.aclose()
        await here.aclose()


async def test_a_killed_joining_engine_fails_every_batch_it_held_with_503(tiny: tuple[Any, Any]) -> None:
    model, tokenizer = tiny
    backend = LocalBackend(model, tokenizer, model_id="tiny", config=LocalConfig(engine="process", continuous=True))
    async with PolicyServer(backend) as server, \
            httpx.AsyncClient(base_url=server.base_url, timeout=DEADLINE_S) as client:
        pid = backend.engine.pid

        def ask(seed: int) -> Any:
            return asyncio.ensure_future(client.post("/chat/completions", json=chat_body(
                "tell me everything", temperature=1.0, seed=seed, max_tokens=3000)))

        first = ask(1)
        await _until(lambda: backend.engine.batches_started == 1, "the first batch to start")
        second = ask(2)
        await _until(lambda: backend.engine.batches_started == 2, "the second batch to join")
        os.kill(pid, signal.SIGKILL)
        for failed in await asyncio.gather(first, second):
            assert failed.status_code == 503, failed.text
            error = failed.json()["error"]
            assert error["code"] == "engine_restarted" and str(pid) in error["message"]
            assert "SIGKILL" in error["message"]
        assert backend.engine.starts == 2 and backend.engine.pid != pid
        again = await client.post("/chat/completions", json=chat_body("hi", temperature=0, max_tokens=5))
        assert again.status_code == 200 and again.json()["choices"][0]["token_ids"]


def test_batches_hold_the_weights_lock_together_and_a_write_alone() -> None:
    import threading

    from openenv_train.policy import WeightsLock

    lock = WeightsLock()
    first, second = lock.shared(), lock.shared()
    first.__enter__()
    second.__enter__()  # two batches decoding at once
    wrote, later_in = threading.Event(), threading.Event()

    def write() -> None:
        with lock:
            wrote.set()

    def later() -> None:
        with lock.shared():
            later_in.set()

    writer = threading.Thread(target=write)
    writer.start()
    deadline = time.monotonic() + DEADLINE_S
    while not lock._writers_waiting:  # the write waits for the batches
        assert time.monotonic() < deadline
        time.sleep(0.001)
    reader = threading.Thread(target=later)
    reader.start()
    first.__exit__(None, None, None)
    assert not wrote.wait(0.05) and not later_in.is_set()  # one batch still decodes; a new one waits for the write
    second.__exit__(None, None, None)
    assert wrote.wait(DEADLINE_S) and later_in.wait(DEADLINE_S)
    writer.join()
    reader.join()
