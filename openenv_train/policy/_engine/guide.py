"""Token-level automata that enforce a :class:`Constraint` while a local model samples (constrained decoding).

- A **choice list** becomes a token trie over each choice's *canonical tokenization*
  (``tokenizer(choice, add_special_tokens=False)``, the ids the tokenizer gives the string on its own), followed
  by the end-of-turn token: the completion is exactly one choice, spelled as the tokenizer spells it, then the
  end of the turn. A choice whose canonical ids do not decode back to it, or that contains special tokens, is
  refused (400).
- A **choice list in any order** (``guided_choice_order: "any"``, equal-length choices whose characters are single
  tokens): the completion writes one choice's characters in an order the model picks, each followed by the marker of
  its 1-based position (``r2e3s4h5f1`` spells ``fresh``), every position once, then the end token. A character is
  allowed when some remaining choice has it at a position not written yet, and after it the markers of those
  positions: what the written characters already determine is forced.
- A **regex** is enforced on the text: at each step the allowed tokens are those whose text keeps the completion
  a prefix of some full match (``regex``'s partial matching), and the end token once it fullmatches. Only tokens
  that decode to whole characters on their own take part (a byte-level token holding half a UTF-8 character is
  never offered).

Each trie node / regex prefix keeps its allowed ids as one tensor (built when first reached), so a step costs a
dict lookup and one tensor index per constrained row, whatever the vocabulary or the number of choices.
Tries are cached by content (the list in its order; and each string's ids), so a 10,000-word list is tokenised once.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from .._errors import InvalidRequest
from .._types import Constraint

if TYPE_CHECKING:
    import torch

__all__ = ["ChoiceGuide", "ExcludingGuide", "Guide", "GuideCache", "RegexGuide", "SlotGuide", "read_in_order", "spell_in_order"]

#: The state of a row that has produced the end token.
DONE = -1


class Guide:
    """A token automaton: a start state, the ids allowed in a state, the state after a token."""

    end_id: int
    source: Constraint | None = None
    """The constraint it was built from (set by :class:`GuideCache`): another process builds the same guide from it."""
    base: Guide | None = None
    """The cached guide this one is less a few choices of (:meth:`excluding`), else None."""
    dropped: Sequence[list[int]] = ()
    """The dropped choices' canonical token ids, when ``base`` is set."""

    def start(self) -> Any:
        """The state before the first completion token."""
        raise NotImplementedError

    def allowed(self, state: Any) -> torch.Tensor:
        """The token ids allowed next (a 1-D long tensor; empty at a dead end)."""
        raise NotImplementedError

    def advance(self, state: Any, token: int) -> Any:
        """The state after ``token`` (one of ``allowed(state)``)."""
        raise NotImplementedError

    def excluding(self, dropped: list[list[int]]) -> Guide:
        """This guide less the choices whose canonical token ids are ``dropped`` (choice guides only)."""
        raise TypeError(f"{type(self).__name__} has no choices to drop")


class ChoiceGuide(Guide):
    """A trie of token sequences; a complete sequence may be followed by ``end_id``."""

    def __init__(self, sequences: list[list[int]], end_id: int) -> None:
        self.end_id = end_id
        self.children: list[dict[int, int]] = [{}]
        self.terminal: list[bool] = [False]
        for seq in sequences:
            node = 0
            for token in seq:
                nxt = self.children[node].get(token)
                if nxt is None:
                    nxt = len(self.children)
                    self.children[node][token] = nxt
                    self.children.append({})
                    self.terminal.append(False)
                node = nxt
            self.terminal[node] = True
        self._allowed: list[torch.Tensor | None] = [None] * len(self.children)
        self._counts: list[int] | None = None

    def start(self) -> int:
        return 0

    def allowed(self, state: int) -> torch.Tensor:
        ids = self._allowed[state]
        if ids is None:
            import torch

            ids = torch.tensor([*self.children[state], *([self.end_id] if self.terminal[state] else [])],
                               dtype=torch.long)
            self._allowed[state] = ids
        return ids

    def advance(self, state: int, token: int) -> int:
        return DONE if token == self.end_id else self.children[state][token]

    def excluding(self, dropped: list[list[int]]) -> Guide:
        return ExcludingGuide(self, dropped)

    def subtree_counts(self) -> list[int]:
        """Complete sequences under each node (computed once; children are numbered after their parents)."""
        if self._counts is None:
            counts = [int(t) for t in self.terminal]
            for node in range(len(self.children) - 1, -1, -1):
                counts[node] += sum(counts[child] for child in self.children[node].values())
            self._counts = counts
        return self._counts


class ExcludingGuide(Guide):
    """A cached :class:`ChoiceGuide` less a few of its sequences (a choice list that drops words already played):
    only the nodes on the dropped sequences' paths get new allowed ids, so no trie is rebuilt per request."""

    base: ChoiceGuide

    def __init__(self, base: ChoiceGuide, dropped: list[list[int]]) -> None:
        self.base, self.end_id, self.dropped = base, base.end_id, dropped
        counts = base.subtree_counts()
        self._left: dict[int, int] = {}  # node -> choices left under it, for nodes on a dropped path
        self._dead: set[int] = set()  # nodes where a dropped choice ends
        for seq in dropped:
            node = 0
            for token in seq:
                self._left[node] = self._left.get(node, counts[node]) - 1
                node = base.children[node][token]
            self._left[node] = self._left.get(node, counts[node]) - 1
            self._dead.add(node)
        self._counts = counts
        self._allowed: dict[int, torch.Tensor] = {}

    def start(self) -> int:
        return 0

    def allowed(self, state: int) -> torch.Tensor:
        if state not in self._left:
            return self.base.allowed(state)
        ids = self._allowed.get(state)
        if ids is None:
            import torch

            ok = [t for t, child in self.base.children[state].items() if self._left.get(child, self._counts[child]) > 0]
            if self.base.terminal[state] and state not in self._dead:
                ok.append(self.end_id)
            ids = self._allowed[state] = torch.tensor(ok, dtype=torch.long)
        return ids

    def advance(self, state: int, token: int) -> int:
        return self.base.advance(state, token)


def spell_in_order(word: str, order: Sequence[int]) -> str:
    """``word`` as :class:`SlotGuide` spells it: each character, in ``order`` (0-based positions), followed by the
    1-based number of its position.

    >>> spell_in_order("fresh", [1, 2, 3, 4, 0])
    'r2e3s4h5f1'
    """
    return "".join(f"{word[i]}{i + 1}" for i in order)


def read_in_order(text: str, length: int) -> str | None:
    """The word a reply in :func:`spell_in_order`'s form spells, or None when it is not one (a position missing,
    repeated or out of range, or text between the pairs).

    >>> read_in_order("r2e3s4h5f1", 5), read_in_order("fresh", 5)
    ('fresh', None)
    """
    if len(text) != 2 * length:
        return None
    letters: dict[int, str] = {}
    for k in range(0, len(text), 2):
        char, digit = text[k], text[k + 1]
        if not digit.isdigit() or not 1 <= int(digit) <= length or int(digit) in letters:
            return None
        letters[int(digit)] = char
    return "".join(letters[p] for p in range(1, length + 1))


class SlotGuide(Guide):
    """Equal-length choices, each character followed by its position's marker, positions in any order.

    The state is (the character code written at each position, -1 where none yet; the character just written whose
    position has not been, -1 when none). Allowed ids are cached per state; the choices still possible per set of written
    characters are a boolean mask over the choices, cached too.

    Args:
        codes: ``(choices, length)`` array: each choice's characters as indices into ``char_ids``.
        markers: Token id of each position's marker (``"1"``, ``"2"``, ...).
        char_ids: Token id of each character index.
        end_id: The end-of-turn token.
        keep: Which choices take part (None: all).
        max_states: Cached states kept (least recently used dropped first).
    """

    def __init__(self, codes: Any, markers: Sequence[int], char_ids: Sequence[int], end_id: int, keep: Any = None,
                 *, max_states: int = 65536) -> None:
        import numpy as np

        self.codes, self.markers, self.char_ids, self.end_id = codes, list(markers), list(char_ids), end_id
        self.keep = np.ones(len(codes), dtype=bool) if keep is None else keep
        self.max_states = max_states
        self._position = {m: p for p, m in enumerate(self.markers)}
        self._code = {t: c for c, t in enumerate(self.char_ids)}
        self._rows: dict[bytes, int] | None = None
        self._allowed: OrderedDict[Any, torch.Tensor] = OrderedDict()
        self._masks: OrderedDict[tuple[int, ...], Any] = OrderedDict()

    def start(self) -> tuple[tuple[int, ...], int]:
        return (-1,) * self.codes.shape[1], -1

    def _alive(self, written: tuple[int, ...]) -> Any:
        mask = self._masks.get(written)
        if mask is None:
            last = max((p for p, c in enumerate(written) if c >= 0), default=-1)
            if last < 0:
                mask = self.keep
            else:
                parent = self._alive((*written[:last], -1, *written[last + 1:]))
                mask = parent & (self.codes[:, last] == written[last])
            self._masks[written] = mask
            if len(self._masks) > self.max_states:
                self._masks.popitem(last=False)
        else:
            self._masks.move_to_end(written)
        return mask

    def allowed(self, state: tuple[tuple[int, ...], int]) -> torch.Tensor:
        ids = self._allowed.get(state)
        if ids is None:
            import numpy as np
            import torch

            written, pending = state
            alive = self._alive(written)
            if not alive.any():
                ok: list[int] = []
            elif pending >= 0:
                ok = [m for p, (m, c) in enumerate(zip(self.markers, written, strict=True))
                      if c < 0 and (self.codes[alive, p] == pending).any()]
            elif all(c >= 0 for c in written):
                ok = [self.end_id]
            else:
                free = [p for p, c in enumerate(written) if c < 0]
                ok = [self.char_ids[c] for c in np.unique(self.codes[alive][:, free])]
            ids = self._allowed[state] = torch.tensor(ok, dtype=torch.long)
            if len(self._allowed) > self.max_states:
                self._allowed.popitem(last=False)
        return ids

    def advance(self, state: tuple[tuple[int, ...], int], token: int) -> tuple[tuple[int, ...], int] | int:
        if token == self.end_id:
            return DONE
        written, pending = state
        if pending < 0:
            return written, self._code[token]
        p = self._position[token]
        return (*written[:p], pending, *written[p + 1:]), -1

    def excluding(self, dropped: list[list[int]]) -> SlotGuide:
        import numpy as np

        if self._rows is None:
            self._rows = {row.tobytes(): i for i, row in enumerate(self.codes)}
        keep = self.keep.copy()
        for ids in dropped:
            row = self._rows.get(np.array([self._code[t] for t in ids], dtype=self.codes.dtype).tobytes())
            if row is not None:
                keep[row] = False
        guide = SlotGuide(self.codes, self.markers, self.char_ids, self.end_id, keep, max_states=self.max_states)
        guide.base, guide.dropped, guide._rows = self, dropped, self._rows
        return guide


class RegexGuide(Guide):
    """Allowed tokens keep the text a partial match of ``pattern``; the state is the text so far."""

    def __init__(self, pattern: Any, texts: dict[int, str], end_id: int, *, max_states: int = 65536) -> None:
        self.pattern, self.texts, self.end_id, self.max_states = pattern, texts, end_id, max_states
        self.by_first: dict[str, list[tuple[int, str]]] = {}
        for token, text in texts.items():
            self.by_first.setdefault(text[0], []).append((token, text))
        self._allowed: OrderedDict[str, torch.Tensor] = OrderedDict()

    def start(self) -> str:
        return ""

    def allowed(self, state: str) -> torch.Tensor:
        ids = self._allowed.get(state)
        if ids is None:
            import torch

            partial = self.pattern.fullmatch
            ok = [token for first, group in self.by_first.items() if partial(state + first, partial=True)
                  for token, text in group if len(text) == 1 or partial(state + text, partial=True)]
            if self.pattern.fullmatch(state) is not None:
                ok.append(self.end_id)
            ids = torch.tensor(sorted(ok), dtype=torch.long)
            self._allowed[state] = ids
            if len(self._allowed) > self.max_states:
                self._allowed.popitem(last=False)
        return ids

    def advance(self, state: str, token: int) -> str | int:
        return DONE if token == self.end_id else state + self.texts[token]


class GuideCache:
    """Builds guides for one tokenizer, caching them by constraint content (and choices' ids by string).

    Not thread-safe: the caller holds its tokenizer lock.
    """

    def __init__(self, tokenizer: Any, end_id: int, *, max_guides: int = 64, max_strings: int = 1_000_000) -> None:
        self.tokenizer, self.end_id = tokenizer, end_id
        self.max_guides, self.max_strings = max_guides, max_strings
        self._guides: OrderedDict[Any, Guide] = OrderedDict()
        self._sets: dict[Any, frozenset[str]] = {}  # a cached choice list as a set, for _subset
        self._ids: dict[str, list[int]] = {}
        self._texts: dict[int, str] | None = None
        unk = getattr(tokenizer, "unk_token_id", None)
        self._refused = frozenset([int(i) for i in getattr(tokenizer, "all_special_ids", ()) or ()]
                                  + ([int(unk)] if unk is not None else []))

    def get(self, constraint: Constraint) -> Guide:
        """The guide of a constraint, built on first use.

        Raises:
            InvalidRequest: a choice the tokenizer cannot produce, or a regex that matches nothing it can.
        """
        key: Any = constraint.choices if constraint.choices is not None else constraint.regex  # str or tuple
        kind = SlotGuide if constraint.order == "any" else ChoiceGuide
        if kind is SlotGuide:
            key = ("any", key)
        guide = self._guides.get(key)
        if guide is not None:
            self._guides.move_to_end(key)
            return guide
        if constraint.choices is not None:
            guide = self._subset(constraint.choices, kind)  # not cached: cheap to make, would crowd out the full lists
            if guide is not None:
                return guide
        if constraint.choices is None:
            guide = self._regex(constraint)
        else:
            guide = self._slots(constraint) if kind is SlotGuide else self._choices(constraint)
        guide.source = constraint
        self._guides[key] = guide
        if len(self._guides) > self.max_guides:
            old, _ = self._guides.popitem(last=False)
            self._sets.pop(old, None)
        return guide

    def _subset(self, choices: tuple[str, ...], kind: type, most_dropped: int = 64) -> Guide | None:
        """A cached choice guide of ``kind`` less a few choices (a caller that drops words already played from one
        list)."""
        wanted: frozenset[str] | None = None
        for key, guide in reversed(self._guides.items()):
            listed = key[1] if kind is SlotGuide else key
            if not (type(guide) is kind and len(choices) < len(listed) <= len(choices) + most_dropped):
                continue
            wanted = frozenset(choices) if wanted is None else wanted
            base = self._sets.get(key)
            if base is None:
                base = self._sets[key] = frozenset(listed)
            if len(wanted) == len(choices) and wanted <= base:
                dropped = [self._ids.get(c) for c in base - wanted]
                if any(ids is None for ids in dropped):
                    continue  # the string cache was cleared since: build the list afresh
                self._guides.move_to_end(key)
                return guide.excluding(dropped)  # type: ignore[arg-type]
        return None

    def _choices(self, constraint: Constraint) -> ChoiceGuide:
        choices = list(dict.fromkeys(constraint.choices or ()))
        missing = [c for c in choices if c not in self._ids]
        if missing:
            if len(self._ids) + len(missing) > self.max_strings:
                self._ids.clear()
            encoded, decoded = self._encode_decode(missing)
            for i, (choice, ids, text) in enumerate(zip(missing, encoded, decoded, strict=True)):
                bad = not self._refused.isdisjoint(ids)
                if text != choice or bad or not ids:
                    index = constraint.choices.index(choice) if constraint.choices else i
                    raise InvalidRequest(
                        f"'{constraint.field}[{index}]' ({choice!r}) cannot be produced by this model's tokenizer: "
                        f"its tokens {self.tokenizer.convert_ids_to_tokens(ids)[:12]} decode to {text!r}"
                        f"{' and include special/unknown tokens' if bad else ''}; use text the tokenizer can spell",
                        param=constraint.field.partition(".")[0])
                self._ids[choice] = list(ids)
        return ChoiceGuide([self._ids[c] for c in choices], self.end_id)

    def _slots(self, constraint: Constraint) -> SlotGuide:
        import numpy as np

        choices = list(dict.fromkeys(constraint.choices or ()))
        name = constraint.field.partition(".")[0]
        length = len(choices[0])
        if length > 9 or any(len(c) != length for c in choices):
            odd = next((c for c in choices if len(c) != length), choices[0])
            raise InvalidRequest(f"'guided_choice_order: any' needs choices of one length, at most 9 characters (a "
                                 f"position is one digit); {odd!r} has {len(odd)} and {choices[0]!r} {length}",
                                 param=name)
        alphabet = sorted(set("".join(choices)))
        vocab = self.tokenizer.get_vocab()
        ids = {c: vocab.get(c) for c in [*alphabet, *(str(p + 1) for p in range(length))]}
        missing = [c for c, i in ids.items() if i is None or i in self._refused]
        if missing:
            raise InvalidRequest(f"'guided_choice_order: any' needs every character of the choices and the position "
                                 f"digits as single tokens of this model's tokenizer; {missing[:8]} are not",
                                 param=name)
        index = {c: i for i, c in enumerate(alphabet)}
        codes = np.array([[index[c] for c in choice] for choice in choices], dtype=np.int16)
        for choice in choices:  # the canonical ids _subset names dropped choices by
            self._ids.setdefault(choice, [ids[c] for c in choice])  # type: ignore[misc]
        return SlotGuide(codes, [ids[str(p + 1)] for p in range(length)], [ids[c] for c in alphabet],  # type: ignore[misc]
                         self.end_id)

    def _encode_decode(self, texts: list[str]) -> tuple[list[list[int]], list[str]]:
        """Canonical ids of each text and what they decode to (the Rust tokenizer directly when there is one: the
        same ids as ``tokenizer(text, add_special_tokens=False)`` without converting 10,000 lists in Python)."""
        fast = getattr(self.tokenizer, "backend_tokenizer", None)
        if fast is not None and not getattr(self.tokenizer, "clean_up_tokenization_spaces", False):
            encoded = [e.ids for e in fast.encode_batch(texts, add_special_tokens=False)]
            return encoded, list(fast.decode_batch(encoded, skip_special_tokens=False))
        encoded = [list(ids) for ids in self.tokenizer(texts, add_special_tokens=False)["input_ids"]]
        return encoded, list(self.tokenizer.batch_decode(encoded, skip_special_tokens=False,
                                                         clean_up_tokenization_spaces=False))

    def _regex(self, constraint: Constraint) -> RegexGuide:
        import regex

        name = constraint.field.partition(".")[0]
        try:
            pattern = regex.compile(constraint.regex or "")
        except regex.error as exc:
            raise InvalidRequest(f"'{constraint.field}' does not compile as a regular expression: {exc}",
                                 param=name) from None
        guide = RegexGuide(pattern, self._token_texts(), self.end_id)
        if not len(guide.allowed(guide.start())):
            raise InvalidRequest(f"'{constraint.field}' ({constraint.regex!r}) matches no text this model's tokenizer "
                                 "can produce", param=name)
        return guide

    def _token_texts(self) -> dict[int, str]:
        """Every non-special token that decodes to whole characters on its own, with its text."""
        if self._texts is None:
            vocab = sorted(self.tokenizer.get_vocab().values())
            pieces = self.tokenizer.batch_decode([[t] for t in vocab], skip_special_tokens=False,
                                                 clean_up_tokenization_spaces=False)
            self._texts = {t: p for t, p in zip(vocab, pieces, strict=True)
                           if p and "\ufffd" not in p and t not in self._refused}
        return self._texts
