"""The call graph of a trace: parents by exact token prefix, lines (main and branches), prefix breaks."""

from __future__ import annotations

from typing import Any

from openenv_train.trace import TrainingTrace, TrainingTurn, call_graph


def turn(node_id: str, prompt: list[int], completion: list[int], messages: list[dict[str, Any]] | None = None
         ) -> TrainingTurn:
    return TrainingTurn(node_id=node_id, prompt_token_ids=prompt, completion_token_ids=completion,
                        request={"messages": messages or []})


def user(text: str) -> dict[str, Any]:
    return {"role": "user", "content": text}


def test_a_conversation_with_a_side_call_a_retry_and_a_rewrite() -> None:
    trace = TrainingTrace(turns=[
        turn("a", [1, 2, 3], [4, 5], [user("q")]),
        turn("title", [1, 9, 9], [7], [user("title?")]),              # side call: its own prompt
        turn("b", [1, 2, 3, 4, 5, 6], [7], [user("q"), user("r")]),   # continues a
        turn("b2", [1, 2, 3, 4, 5, 6], [8, 8], [user("q"), user("r")]),  # a retry: continues a too
        turn("c", [1, 2, 3, 4, 5, 6, 8, 8, 6], [2], [user("q"), user("r"), user("s")]),  # continues the retry
        turn("d", [1, 2, 3, 4, 6, 6], [1], [user("q"), user("r2")]),  # context rewritten after a's reply
    ])
    graph = trace.call_graph()
    assert graph == call_graph(trace)
    assert [(n.node_id, n.parent) for n in graph.nodes] == [
        ("a", None), ("title", None), ("b", "a"), ("b2", "a"), ("c", "b2"), ("d", None)]
    assert graph.main is not None and graph.main.node_ids == ("a", "b2", "c")
    assert [(line.node_ids, line.parent) for line in graph.branches] == [
        (("title",), None), (("b",), "a"), (("d",), None)]
    assert graph.children("a") == ["b", "b2"] and graph.node("c").line == graph.main.index
    title, rewrite = graph.breaks
    assert (title.node_id, title.closest, title.common, title.rerendered, title.kind) == ("title", "a", 1, 2,
                                                                                          "rewritten")
    # d shares [1, 2, 3, 4] with a's prompt + completion: a's last token and everything after it was re-rendered.
    assert (rewrite.node_id, rewrite.closest, rewrite.common, rewrite.rerendered, rewrite.dropped) == \
        ("d", "a", 4, 2, 1)


def test_a_retokenized_conversation_is_named() -> None:
    """The messages grew, but the prompt re-tokenised the earlier reply differently."""
    trace = TrainingTrace(turns=[turn("a", [1, 2], [3, 4], [user("q")]),
                                 turn("b", [1, 2, 34, 5], [6], [user("q"), {"role": "assistant"}, user("r")])])
    graph = call_graph(trace)
    (skew,) = graph.breaks
    assert (skew.closest, skew.common, skew.rerendered, skew.dropped, skew.kind) == ("a", 2, 2, 2, "retokenized")
    assert graph.main is not None and graph.main.node_ids == ("b",)  # a tie: the later line


def test_calls_without_token_ids_link_by_messages() -> None:
    trace = TrainingTrace(turns=[turn("a", [], [], [user("q")]), turn("b", [], [], [user("q"), user("r")]),
                                 turn("c", [], [], [user("other")])])
    graph = call_graph(trace)
    assert [n.parent for n in graph.nodes] == [None, "a", None] and graph.breaks == ()
    assert graph.main is not None and graph.main.node_ids == ("a", "b")
    assert call_graph(TrainingTrace()).main is None
