"""An episode's model calls as a graph: which call each one continues, token for token.

A call whose prompt ids start with an earlier call's prompt + completion ids continues it (its child; the longest
such earlier call is the parent). A call that continues none starts a new root: a harness that rewrote its context
(injected reminders, compaction) or a side call (a title, a subagent with its own system prompt). Calls without
token ids (``rollout_type="eval"``) are linked by their messages instead (a call whose messages start with an
earlier call's messages, and are longer, continues it).

Lines: each root starts a line, which goes on through the child with the longest chain below it (the first such
child on a tie); any other child starts a line of its own (a retry, a fork). The main line is the line of the most
calls (on a tie, the one with the later last call); the others are branches.

Prefix breaks: each root after the first is compared with the earlier call sharing the longest token prefix with
it, the way OpenEnv's ``measure_retokenization_skew`` compares a re-rendered prompt with the engine's.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

if TYPE_CHECKING:  # types only: _rows imports this module
    from ._rows import TrainingTrace, TrainingTurn

__all__ = ["CallGraph", "CallLine", "CallNode", "PrefixBreak", "call_graph"]


@dataclass(frozen=True)
class CallNode:
    """One call of the trace in its graph."""

    node_id: str
    index: int
    """Position of the call in the trace."""
    parent: str | None
    """The node id of the earlier call this one continues; None for a root."""
    line: int
    """Index of the call's line in :attr:`CallGraph.lines`."""


@dataclass(frozen=True)
class CallLine:
    """A chain of calls, each continuing the one before."""

    index: int
    node_ids: tuple[str, ...]
    parent: str | None
    """The call the line's first call continues (a fork), or None (a new root)."""
    main: bool


@dataclass(frozen=True)
class PrefixBreak:
    """A call (after the first) whose prompt continues no earlier call, measured against the closest one."""

    node_id: str
    closest: str | None
    """The earlier call whose prompt + completion ids share the longest prefix with this call's prompt ids."""
    common: int
    """Where this call's prompt ids first differ from the closest call's prompt + completion ids."""
    rerendered: int
    """Tokens of this call's prompt after that point (rendered anew rather than kept)."""
    dropped: int
    """Tokens of the closest call's prompt + completion after that point (not kept as they were)."""
    kind: Literal["retokenized", "rewritten"]
    """``retokenized``: the call's messages do extend the closest call's, only their tokens differ (the text was
    rendered again, e.g. without token continuity); ``rewritten``: the harness changed its context or made a side
    call."""


@dataclass(frozen=True)
class CallGraph:
    """The calls of one trace linked by exact prefix; see the module docstring for the rules."""

    nodes: tuple[CallNode, ...]
    lines: tuple[CallLine, ...]
    breaks: tuple[PrefixBreak, ...]

    def node(self, node_id: str) -> CallNode:
        """The node of ``node_id`` (KeyError if none)."""
        for node in self.nodes:
            if node.node_id == node_id:
                return node
        raise KeyError(node_id)

    def children(self, node_id: str) -> list[str]:
        """Node ids of the calls that continue ``node_id``, in call order."""
        return [n.node_id for n in self.nodes if n.parent == node_id]

    @property
    def main(self) -> CallLine | None:
        """The main line (None for a trace without calls)."""
        return next((line for line in self.lines if line.main), None)

    @property
    def branches(self) -> tuple[CallLine, ...]:
        """Every line but the main one, in the order they started."""
        return tuple(line for line in self.lines if not line.main)


def _common_prefix(a: Sequence[Any], b: Sequence[Any]) -> int:
    """Length of the common prefix of two lists (slice compares run in C; bisect on them)."""
    n = min(len(a), len(b))
    if a[:n] == b[:n]:
        return n
    low, high = 0, n  # a[:low] == b[:low] and a[:high] != b[:high]
    while high - low > 1:
        mid = (low + high) // 2
        if a[low:mid] == b[low:mid]:
            low = mid
        else:
            high = mid
    return low


def _messages(turn: TrainingTurn) -> list[Any]:
    return list(turn.request.get("messages") or [])


def _parent(turn: TrainingTurn, earlier: list[TrainingTurn], ends: list[list[int]]) -> int | None:
    """Index of the earlier call ``turn`` continues, the longest one; None if none."""
    prompt = turn.prompt_token_ids
    if prompt:  # longest first: in a growing conversation the first candidate tried is the parent
        for i in sorted(range(len(ends)), key=lambda i: -len(ends[i])):
            end = ends[i]
            if earlier[i].prompt_token_ids and len(end) <= len(prompt) and prompt[:len(end)] == end:
                return i
        return None
    best, best_len = None, -1
    messages = _messages(turn)  # no token ids: the same rule on messages, which must grow
    for i, other in enumerate(earlier):
        old = _messages(other)
        if not other.prompt_token_ids and best_len < len(old) < len(messages) and messages[:len(old)] == old:
            best, best_len = i, len(old)
    return best


def _break(turn: TrainingTurn, earlier: list[TrainingTurn], ends: list[list[int]]) -> PrefixBreak:
    prompt = turn.prompt_token_ids
    closest, common = None, -1
    for i, end in enumerate(ends):
        if earlier[i].prompt_token_ids:
            shared = _common_prefix(prompt, end)
            if shared > common:
                closest, common = i, shared
    if closest is None:
        return PrefixBreak(turn.node_id, None, 0, len(prompt), 0, "rewritten")
    old, new = _messages(earlier[closest]), _messages(turn)
    kind: Literal["retokenized", "rewritten"] = (
        "retokenized" if len(new) > len(old) and new[:len(old)] == old else "rewritten")
    return PrefixBreak(turn.node_id, earlier[closest].node_id, common, len(prompt) - common,
                       len(ends[closest]) - common, kind)


def call_graph(trace: TrainingTrace) -> CallGraph:
    """Link the trace's calls by exact prefix into lines, and measure each prefix break."""
    turns = list(trace.turns)
    ends = [list(t.prompt_token_ids) + list(t.completion_token_ids) for t in turns]
    parents: list[int | None] = []
    breaks: list[PrefixBreak] = []
    for i, turn in enumerate(turns):
        parent = _parent(turn, turns[:i], ends[:i])
        parents.append(parent)
        if parent is None and i > 0 and turn.prompt_token_ids:
            breaks.append(_break(turn, turns[:i], ends[:i]))
    children: list[list[int]] = [[] for _ in turns]
    for i, parent in enumerate(parents):
        if parent is not None:
            children[parent].append(i)
    height = [1] * len(turns)  # calls in the longest chain from a call down; children come after their parent
    for i in reversed(range(len(turns))):
        height[i] = 1 + max((height[c] for c in children[i]), default=0)
    line_of = [0] * len(turns)
    chains: list[list[int]] = []
    for i in range(len(turns)):
        parent = parents[i]
        heir = None if parent is None else max(children[parent], key=lambda c: (height[c], -c))
        if heir == i:
            assert parent is not None
            line_of[i] = line_of[parent]
            chains[line_of[i]].append(i)
        else:
            line_of[i] = len(chains)
            chains.append([i])
    main = max(range(len(chains)), key=lambda k: (len(chains[k]), chains[k][-1]), default=None)

    def ident(i: int | None) -> str | None:
        return None if i is None else turns[i].node_id

    lines = tuple(CallLine(k, tuple(turns[i].node_id for i in chain), ident(parents[chain[0]]), k == main)
                  for k, chain in enumerate(chains))
    nodes = tuple(CallNode(t.node_id, i, ident(parents[i]), line_of[i]) for i, t in enumerate(turns))
    return CallGraph(nodes, lines, tuple(breaks))
