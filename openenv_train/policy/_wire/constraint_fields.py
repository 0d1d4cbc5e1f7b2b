"""Constrained-decoding fields of a chat request (vLLM's names), validated into a :class:`Constraint`.

Accepted: ``guided_choice: [...]`` and ``guided_regex: "..."`` (vLLM's OpenAI server), and the newer
``structured_outputs: {"choice": [...]}`` / ``{"regex": "..."}``. Ours: ``guided_choice_order: "any"`` beside a
choice list writes a choice's characters in any order, each followed by its position (the local backend enforces it).
Other structured-output kinds (``json``, ``grammar``, ...) are left in the body: an upstream backend forwards them,
the local backend refuses them.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from .._errors import InvalidRequest
from .._types import Constraint

__all__ = ["CONSTRAINT_FIELDS", "UNSUPPORTED_LOCALLY", "parse_constraint", "unsupported_locally"]

#: The body fields that carry a decoding constraint.
CONSTRAINT_FIELDS = ("guided_choice", "guided_regex", "guided_json", "guided_grammar", "structured_outputs",
                     "guided_choice_order")

#: Structured-output fields a local model cannot enforce (only choice and regex are implemented).
UNSUPPORTED_LOCALLY = ("guided_json", "guided_grammar", "structured_outputs.json", "structured_outputs.grammar",
                       "structured_outputs.json_object", "structured_outputs.structural_tag")


def _fields(body: Mapping[str, Any]) -> dict[str, Any]:
    """Every constraint field the body sets, by its dotted name."""
    found = {k: body[k] for k in ("guided_choice", "guided_regex") if body.get(k) is not None}
    structured = body.get("structured_outputs")
    if structured is not None:
        if not isinstance(structured, Mapping):
            raise InvalidRequest("'structured_outputs' must be an object such as {\"choice\": [...]} or "
                                 "{\"regex\": \"...\"}", param="structured_outputs")
        found.update({f"structured_outputs.{k}": structured[k] for k in ("choice", "regex")
                      if structured.get(k) is not None})
    return found


def _choices(name: str, value: Any) -> tuple[str, ...]:
    if not isinstance(value, list) or not value:
        raise InvalidRequest(f"'{name}' must be a non-empty list of strings, got {_short(value)}", param=name)
    if set(map(type, value)) != {str} or "" in value:  # C-speed checks: lists may hold 10,000+ words
        for i, item in enumerate(value):
            if not isinstance(item, str):
                raise InvalidRequest(f"'{name}[{i}]' must be a string, got {_short(item)}", param=name)
            if not item:
                raise InvalidRequest(f"'{name}[{i}]' is the empty string; every choice needs at least one character",
                                     param=name)
    return tuple(value)


def _regex(name: str, value: Any) -> str:
    if not isinstance(value, str) or not value:
        raise InvalidRequest(f"'{name}' must be a non-empty regular expression string, got {_short(value)}",
                             param=name)
    try:
        re.compile(value)
    except re.error as exc:
        raise InvalidRequest(f"'{name}' does not compile as a regular expression: {exc}", param=name) from None
    return value


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


def parse_constraint(body: Mapping[str, Any]) -> Constraint | None:
    """The constraint a request body asks for, or None.

    >>> parse_constraint({"guided_choice": ["yes", "no"]}).choices
    ('yes', 'no')

    Raises:
        InvalidRequest: more than one constraint, an empty or non-string choice, a regex that does not compile.
    """
    found = _fields(body)
    order = body.get("guided_choice_order")
    if order is not None and (order not in ("given", "any") or not any(k.endswith("choice") for k in found)):
        raise InvalidRequest(f"'guided_choice_order' must be \"given\" or \"any\" and come with a choice list "
                             f"(guided_choice); got {_short(order)} with {', '.join(sorted(found)) or 'no constraint'}",
                             param="guided_choice_order")
    if not found:
        return None
    if len(found) > 1:
        raise InvalidRequest(f"the request sets {' and '.join(sorted(found))}; give one constraint (a list of "
                             "choices or a regex), not both", param=sorted(found)[1])
    ((name, value),) = found.items()
    if name.endswith("choice"):
        return Constraint(choices=_choices(name, value), field=name, order=order or "given")
    return Constraint(regex=_regex(name, value), field=name)


def unsupported_locally(body: Mapping[str, Any]) -> str | None:
    """The first structured-output field in ``body`` that only an upstream server can enforce, or None."""
    structured = body.get("structured_outputs")
    for name in UNSUPPORTED_LOCALLY:
        head, _, key = name.partition(".")
        value = (structured.get(key) if isinstance(structured, Mapping) else None) if key else body.get(head)
        if value not in (None, False):
            return name
    return None
