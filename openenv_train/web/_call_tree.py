"""An episode's model calls as a tree for the viewer: :func:`~openenv_train.trace.call_graph` as plain JSON.

Every call is named by its position in the row's ``turns`` (node ids are only unique by convention, and the page
shows the turns by position), so parents, lines and prefix breaks all point at positions.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ..trace import TrainingTrace, TrainingTurn, call_graph

__all__ = ["call_tree"]


def _ids(value: Any) -> list[int]:
    return [int(x) for x in value] if isinstance(value, (list, tuple)) else []


def call_tree(turns: Sequence[Mapping[str, Any]]) -> dict[str, Any] | None:
    """The call graph of a row's turns (dicts with ``prompt_token_ids``, ``completion_token_ids`` and a decoded
    ``request``), or None for fewer than two calls (nothing to link).

    Returns ``{"main": k, "nodes": [...], "lines": [...], "breaks": [...]}``: each node ``{"index", "node_id",
    "parent", "line", "main", "children", "new_from"}`` (``parent`` the position of the call it continues token for
    token, or None for a root; ``children`` the positions of the calls continuing it; ``new_from`` how many of its
    messages the parent already had, with its reply: the rest are what the call added); each line ``{"index", "calls",
    "parent", "main"}`` (``parent`` the call a branch forks from, None for one that starts a new root); each break
    ``{"index", "closest", "common", "rerendered", "dropped", "kind"}`` for a root after the first call
    (``common``: the token position where its prompt ids first differ from the closest call's prompt + completion).
    """
    if len(turns) < 2:
        return None
    trace = TrainingTrace(turns=[
        TrainingTurn(node_id=str(i), prompt_token_ids=_ids(t.get("prompt_token_ids")),
                     completion_token_ids=_ids(t.get("completion_token_ids")),
                     request={"messages": list((t.get("request") or {}).get("messages") or [])}
                     if isinstance(t.get("request"), Mapping) else {})
        for i, t in enumerate(turns)])
    graph = call_graph(trace)

    def pos(node_id: str | None) -> int | None:
        return None if node_id is None else int(node_id)

    def shown_from(i: int, parent: int | None) -> int:
        """How many of call ``i``'s messages its parent already showed (its messages and its reply)."""
        if parent is None:
            return 0
        mine, theirs = trace.turns[i].request.get("messages") or [], trace.turns[parent].request.get("messages") or []
        return len(theirs) + 1 if len(mine) > len(theirs) and mine[:len(theirs)] == theirs else 0

    main = graph.main
    nodes = [{"index": n.index, "node_id": turns[n.index].get("node_id"), "parent": pos(n.parent),
              "line": n.line, "main": main is not None and n.line == main.index,
              "children": [int(c) for c in graph.children(n.node_id)],
              "new_from": shown_from(n.index, pos(n.parent))} for n in graph.nodes]
    lines = [{"index": line.index, "calls": [int(c) for c in line.node_ids], "parent": pos(line.parent),
              "main": line.main} for line in graph.lines]
    breaks = [{"index": int(b.node_id), "closest": pos(b.closest), "common": b.common, "rerendered": b.rerendered,
               "dropped": b.dropped, "kind": b.kind} for b in graph.breaks]
    return {"main": None if main is None else main.index, "nodes": nodes, "lines": lines, "breaks": breaks}
