"""The doc_search env: BM25 over the standard library's docstrings, every question found by searching, tools,
errors and reward, both clients over the wire."""

from __future__ import annotations

from typing import Any

import pytest
from openenv.core import GenericEnvClient as OEGenericEnvClient

from openenv_train.client import ToolCallError
from openenv_train.core import CallToolAction
from openenv_train.envs.doc_search import (
    BM25Index,
    DocSearchEnv,
    DocSearchEnvironment,
    DocSearchQuestionObservation,
    answer_matches,
    bundled_questions,
    choose_question,
    stdlib_corpus,
    tokenize,
)
from tests.conftest import serve_inloop


def call(tool: str, **arguments: Any) -> dict[str, Any]:
    return {"type": "call_tool", "tool_name": tool, "arguments": arguments}


def test_bm25_ranks_and_answers_compare_normalised() -> None:
    assert tokenize("get_close_matches(word)") == ["get_close_matches", "get", "close", "matches", "word"]
    index = BM25Index(["heap push pop", "push a button", "a heap of stones on a heap"])
    assert [i for i, _ in index.search("heap", k=5)] == [2, 0] and index.search("nothing", k=5) == []
    assert answer_matches(("isqrt",), "`math.isqrt()`.") and answer_matches(("0.6",), " 0.60 ")
    assert not answer_matches(("0.6",), "6") and not answer_matches(("quote",), "unquote")
    assert choose_question(seed=4) == choose_question(seed=4)
    with pytest.raises(ValueError, match="did you mean 'isqrt'"):
        choose_question(question_id="isqrtt")


def test_every_question_is_found_by_searching_and_its_document_holds_the_answer() -> None:
    corpus = stdlib_corpus()
    assert len(corpus.documents) > 1000
    for question in bundled_questions():
        doc = corpus.by_id[question.evidence]
        answer = question.answers[0]
        assert doc.id.endswith("." + answer) or f"={answer}" in doc.title.replace(" ", ""), question.id
        found = [d.id for d, _ in corpus.search(question.text, 5)]
        assert question.evidence in found, f"{question.id}: top 5 for the question are {found}"


def test_tools_errors_and_reward_in_one_session() -> None:
    env = DocSearchEnvironment()
    first = env.reset(seed=2, episode_id="ep")
    assert first.question and first.documents > 1000 and "PSF" in first.corpus
    env.reset(question_id="heappushpop")
    hits = env.step(CallToolAction(tool_name="search", arguments={"query": "push item then pop smallest", "k": 3}))
    assert hits.error is None and hits.result["data"]["results"][0]["id"] == "heapq.heappushpop"
    read = env.step(CallToolAction(tool_name="fetch", arguments={"doc_id": "heapq.heappushpop"}))
    assert "more efficiently" in read.result["data"]["text"] and read.reward is None
    typo = env.step(CallToolAction(tool_name="fetch", arguments={"doc_id": "heapq.heappushpo"}))
    assert typo.error is not None and "did you mean 'heapq.heappushpop'" in typo.error.message
    bad = env.step(CallToolAction(tool_name="search", arguments={"query": "x", "k": 0}))
    assert bad.error is not None and bad.error.error_type.value == "invalid_args"
    wrong = env.step(CallToolAction(tool_name="submit_answer", arguments={"answer": "heappush"}))
    assert (wrong.reward, wrong.done) == (0.0, True) and wrong.result["data"]["expected"] == "heappushpop"
    late = env.step(CallToolAction(tool_name="search", arguments={"query": "heap"}))
    assert late.done and late.error is not None and "reset" in late.error.message
    assert (env.state.searches, env.state.fetches, env.state.correct, env.state.step_count) == (1, 1, False, 6)
    env.reset(question_id="close_matches_cutoff")
    right = env.step(CallToolAction(tool_name="submit_answer", arguments={"answer": 0.6}))
    assert (right.reward, right.done) == (1.0, True)
    with pytest.raises(ValueError, match="no question"):
        env.reset(question_id="nope")
    splits = {s.name: len(s) for s in env.task_splits()}
    assert splits == {"train": 16, "test": 8}


async def test_openenv_generic_client_and_the_typed_client_over_the_wire() -> None:
    async with serve_inloop(DocSearchEnvironment) as server:
        async with OEGenericEnvClient(base_url=server.url) as oe:
            first = await oe.reset(question_id="shlex_quote")
            assert "shell-escaped" in first.observation["question"] and first.done is False
            found = await oe.step(call("search", query=first.observation["question"]))
            top = found.observation["result"]["data"]["results"][0]["id"]
            result = await oe.step(call("submit_answer", answer=top))
            assert (top, result.reward, result.done) == ("shlex.quote", 1.0, True)
        async with DocSearchEnv(base_url=server.url) as env:
            reset = await env.reset(question_id="lru_maxsize")
            assert isinstance(reset.observation, DocSearchQuestionObservation)
            text = (await env.call_tool("fetch", doc_id="functools.lru_cache"))["title"]
            assert "maxsize=128" in text
            with pytest.raises(ToolCallError, match="invalid arguments"):
                await env.call_tool("search", query="")
            assert (await env.call_tool("submit_answer", answer="128"))["correct"] is True
