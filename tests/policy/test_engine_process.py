"""The local backend's engine process: the same answers as decoding in this process, a trainer's weight updates
seen by the next request (with its policy version on the captured turn), a killed engine's requests answered 503
and a new engine started, and an engine that does not outlive its parent."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from typing import Any

import httpx
import pytest

from openenv_train.policy import LocalBackend, LocalConfig, PolicyServer, parse_chat_request
from openenv_train.trace import CaptureStore
from tests.policy.conftest import _load, chat_body

DEADLINE_S = 120.0
BODIES = [chat_body("hi", temperature=0, max_tokens=10, logprobs=True, top_logprobs=2),
          chat_body("tell me a story", temperature=1.0, seed=3, max_tokens=12, n=3),
          chat_body("pick one", temperature=1.0, seed=4, max_tokens=8, guided_choice=["crane", "slate", "audio"]),
          chat_body("count", temperature=0.8, top_p=0.9, top_k=20, seed=5, max_tokens=12, stop=["e"]),
          chat_body("digits", temperature=1.0, seed=6, max_tokens=8, guided_regex="[0-9]{2,4}")]


async def _until(condition: Any, what: str) -> None:
    deadline = time.monotonic() + DEADLINE_S
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        await asyncio.sleep(0.01)


async def _answers(backend: LocalBackend, bodies: list[dict[str, Any]]) -> list[list[tuple[Any, ...]]]:
    """One request after another: each batch is one request's rows, the same batches in either engine (rows of
    other widths in a batch change the logprobs' last bits)."""
    results = [await backend.chat(parse_chat_request(b)) for b in bodies]
    return [[(c.message.get("content"), c.finish_reason, c.token_ids, c.logprobs) for c in r.choices] for r in results]


async def test_the_engine_process_answers_what_this_process_decodes(tiny: tuple[Any, Any]) -> None:
    model, tokenizer = tiny
    there = LocalBackend(model, tokenizer)
    here = LocalBackend(model, tokenizer, config=LocalConfig(engine="thread"))
    try:
        assert there.engine.kind == "process" and there.engine.pid != os.getpid() and here.engine.kind == "thread"
        assert await _answers(there, BODIES) == await _answers(here, BODIES)  # ids, logprobs, text: bit for bit
    finally:
        await there.aclose()
        await here.aclose()
    assert there.engine.pid is not None and not _alive(there.engine.pid)


def _optimizer_step(model: Any, *, fused: bool) -> None:
    """One trainer step: fused AdamW writes the weights in place without bumping their version counters."""
    import torch

    optimizer = torch.optim.AdamW(model.parameters(), lr=5e-2, fused=fused)
    ids = torch.tensor([list(range(10, 40))])
    model(input_ids=ids, labels=ids).loss.backward()
    optimizer.step()
    optimizer.zero_grad()


async def test_a_request_after_a_weight_update_decodes_the_new_weights_and_records_its_version(
        tiny_path: Path) -> None:
    import torch

    model, tokenizer = _load(tiny_path)  # its own copy: a "trainer" changes it
    model.train()
    store = CaptureStore()
    store.open_session("s")
    backend = LocalBackend(model, tokenizer, model_id="tiny")
    reference = LocalBackend(model, tokenizer, model_id="tiny", config=LocalConfig(engine="thread"))
    body = chat_body("Guess the word", temperature=0, max_tokens=10)
    async with PolicyServer(backend, capture=store) as server, \
            httpx.AsyncClient(base_url=server.base_url, timeout=DEADLINE_S) as client:

        async def ask(version: int) -> dict[str, Any]:
            backend.version = version
            reply = await client.post("/chat/completions", json=body, headers={"authorization": "Bearer s"})
            assert reply.status_code == 200, reply.text
            want = (await reference.chat(parse_chat_request(body))).choices[0]  # this process, the same weights
            got = reply.json()["choices"][0]
            assert got["token_ids"] == want.token_ids and got["token_logprobs"] == want.logprobs
            return got  # type: ignore[no-any-return]

        first = await ask(0)
        _optimizer_step(model, fused=True)  # in place, in shared memory
        second = await ask(1)
        _optimizer_step(model, fused=False)
        third = await ask(2)
        assert backend.engine.starts == 1  # shared tensors: no restart, no copy
        with torch.no_grad():  # tensors replaced, not written into: the engine must not decode the old ones
            for p in model.parameters():
                p.data = p.data * 1.5
        fourth = await ask(3)
        assert backend.engine.starts == 2
    await reference.aclose()
    logprobs = [tuple(a["token_logprobs"]) for a in (first, second, third, fourth)]
    assert len(set(logprobs)) == 4  # every update changed what was decoded
    assert [t.metadata["policy_version"] for t in store.close_session("s").turns] == [0, 1, 2, 3]


async def test_a_killed_engine_fails_the_requests_it_held_with_503_and_a_new_engine_answers(
        tiny: tuple[Any, Any]) -> None:
    model, tokenizer = tiny
    backend = LocalBackend(model, tokenizer, model_id="tiny")
    async with PolicyServer(backend) as server, \
            httpx.AsyncClient(base_url=server.base_url, timeout=DEADLINE_S) as client:
        pid = backend.engine.pid
        held = asyncio.ensure_future(client.post("/chat/completions", json=chat_body(
            "tell me everything", temperature=1.0, seed=1, max_tokens=3000, n=2)))
        await _until(backend.engine.decoding.is_set, "the engine to start decoding")
        os.kill(pid, signal.SIGKILL)
        failed = await held
        assert failed.status_code == 503, failed.text
        error = failed.json()["error"]
        assert error["code"] == "engine_restarted" and str(pid) in error["message"] and "SIGKILL" in error["message"]
        assert backend.engine.starts == 2 and backend.engine.pid != pid
        again = await client.post("/chat/completions", json=chat_body("hi", temperature=0, max_tokens=5))
        assert again.status_code == 200 and again.json()["choices"][0]["token_ids"]


async def test_a_stream_whose_engine_died_before_its_first_token_is_answered_503(tiny: tuple[Any, Any]) -> None:
    """The head of a stream waits for its first token, so a stream the dead engine held is a plain 503 (which
    OpenAI's clients retry), not an error event after a 200."""
    model, tokenizer = tiny
    backend = LocalBackend(model, tokenizer, model_id="tiny")
    async with PolicyServer(backend) as server, \
            httpx.AsyncClient(base_url=server.base_url, timeout=DEADLINE_S) as client:
        pid, sent = backend.engine.pid, backend.engine.batches_sent
        os.kill(pid, signal.SIGSTOP)  # the engine takes the batch but samples nothing
        held = asyncio.ensure_future(client.post("/chat/completions", json=chat_body(
            "tell me", temperature=1.0, seed=1, max_tokens=20, stream=True)))
        await _until(lambda: backend.engine.batches_sent > sent, "the batch to reach the engine")
        os.kill(pid, signal.SIGKILL)
        failed = await held
        assert failed.status_code == 503, failed.text
        error = failed.json()["error"]
        assert error["code"] == "engine_restarted" and str(pid) in error["message"] and "SIGKILL" in error["message"]
        again = await client.post("/chat/completions", json=chat_body(
            "tell me", temperature=1.0, seed=1, max_tokens=20, stream=True))
        assert again.status_code == 200 and "data: [DONE]" in again.text and backend.engine.pid != pid


_PARENT = textwrap.dedent("""
    import sys
    from transformers import AutoModelForCausalLM, AutoTokenizer
    from openenv_train.policy import LocalBackend

    path = sys.argv[1]
    backend = LocalBackend(AutoModelForCausalLM.from_pretrained(path), AutoTokenizer.from_pretrained(path))
    print(backend.engine.pid, flush=True)
    sys.stdin.read()
""")


async def test_the_engine_process_dies_with_its_parent(tiny_path: Path) -> None:
    parent = subprocess.Popen([sys.executable, "-c", _PARENT, str(tiny_path)], stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)})
    try:
        assert parent.stdout is not None
        engine = int(await asyncio.to_thread(parent.stdout.readline))
        assert _alive(engine)
    finally:
        parent.kill()
        parent.wait()
    await _until(lambda: not _alive(engine), "the engine to exit after its parent")


def _alive(pid: int) -> bool:
    """Whether ``pid`` runs (a zombie, dead but not yet reaped by its parent, counts as gone)."""
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False


def test_the_engine_setting_is_checked() -> None:
    with pytest.raises(ValueError, match="engine must be"):
        LocalConfig(engine="fork")  # type: ignore[arg-type]


def test_guides_go_by_number_with_their_constraint_the_first_time() -> None:
    """A 10,000-word list is sent to the engine once; a request with a few words dropped sends only their ids."""
    from openenv_train.policy import Constraint
    from openenv_train.policy._engine.guide import ChoiceGuide, ExcludingGuide
    from openenv_train.policy._engine.protocol import GuideSender, GuideStore

    built: list[Any] = []

    def build(constraint: Any) -> ChoiceGuide:
        built.append(constraint)
        guide = ChoiceGuide([[1, 2], [1, 3], [4]], end_id=0)
        guide.source = constraint
        return guide

    words, other = build(Constraint(choices=("ab", "ac", "d"))), build(Constraint(choices=("e",)))
    built.clear()
    sender, store = GuideSender(keep=1), GuideStore(build)
    first, fewer = sender.ref(words), sender.ref(ExcludingGuide(words, [[1, 3]]))
    assert first is not None and first.constraint is words.source and first.dropped is None
    assert fewer is not None and fewer.constraint is None and fewer.dropped == ((1, 3),) and fewer.key == first.key
    assert store.guide(first) is store.guide(fewer).base  # type: ignore[attr-defined]
    guide = store.guide(fewer)
    assert guide.allowed(guide.start()).tolist() == [1, 4] and guide.allowed(guide.advance(0, 1)).tolist() == [2]
    assert built == [words.source]  # built once, from the first reference
    assert sender.ref(other) is not None and sender.forgotten() == [first.key]  # keep=1: the list's number goes
    sender.resend()  # a new engine: every constraint again
    assert sender.ref(other).constraint is other.source  # type: ignore[union-attr]
    assert sender.ref(ChoiceGuide([[5]], end_id=0)) is None  # no constraint known: the row sends its own


async def test_closing_a_backend_mid_batch_stops_its_engine_without_starting_another(tiny: tuple[Any, Any]) -> None:
    model, tokenizer = tiny
    backend = LocalBackend(model, tokenizer)
    pid = backend.engine.pid
    held = asyncio.ensure_future(backend.chat(parse_chat_request(chat_body("go on", temperature=1.0, seed=1,
                                                                           max_tokens=3000))))
    await _until(backend.engine.decoding.is_set, "the engine to start decoding")
    await backend.aclose()
    with pytest.raises((asyncio.CancelledError, Exception)):
        await held
    await _until(lambda: not _alive(pid), "the engine to exit")
    assert backend.engine.starts == 1 and backend.engine._process is None


async def test_a_trainers_unpicklable_hooks_stay_out_of_the_engine(tiny: tuple[Any, Any]) -> None:
    """Gradient checkpointing's input hook (a local function) does not pickle; the engine gets the model without
    it and decodes as this process does, and the model here keeps it."""
    model, tokenizer = tiny
    model.enable_input_require_grads()
    hooks = dict(model.get_input_embeddings()._forward_hooks)
    there = LocalBackend(model, tokenizer, config=LocalConfig(engine="process"))
    here = LocalBackend(model, tokenizer, config=LocalConfig(engine="thread"))
    try:
        assert hooks and dict(model.get_input_embeddings()._forward_hooks) == hooks
        assert await _answers(there, BODIES[:2]) == await _answers(here, BODIES[:2])
    finally:
        await there.aclose()
        await here.aclose()
        model.disable_input_require_grads()
