"""Typed, docstring'd Python methods built from JSON-schema tool descriptions (what TRL turns into tools).

TRL (through ``transformers.utils.get_json_schema``) reads a tool's name, type hints and Google-style
docstring (``Args:`` with one line per argument); these functions carry all three.
"""

from __future__ import annotations

import inspect
import keyword
from collections.abc import Callable
from typing import Any

from ...core import OpenEnvTrainError

__all__ = ["ToolSchemaError", "make_tool_method"]

_TYPES: dict[str, type] = {"string": str, "integer": int, "number": float, "boolean": bool, "array": list,
                           "object": dict}


class ToolSchemaError(OpenEnvTrainError, ValueError):
    """A tool description that cannot become a typed method (an argument without a type, a bad name)."""


def _type(tool: str, arg: str, schema: dict[str, Any]) -> Any:
    kind = schema.get("type")
    if isinstance(kind, list):  # ["string", "null"]
        kinds = [k for k in kind if k != "null"]
        kind = kinds[0] if len(kinds) == 1 else None
    if kind is None and isinstance(schema.get("anyOf"), list):
        kinds = [s.get("type") for s in schema["anyOf"] if s.get("type") not in (None, "null")]
        kind = kinds[0] if len(kinds) == 1 else None
    if kind not in _TYPES:
        raise ToolSchemaError(f"tool {tool!r}: argument {arg!r} has no usable JSON type ({schema!r}); give it "
                              f"\"type\": one of {sorted(_TYPES)} in the env's tool/action schema (a Python type hint "
                              f"such as `{arg}: str` on the tool or action field)")
    return _TYPES[kind]


def make_tool_method(name: str, description: str, input_schema: dict[str, Any],
                     call: Callable[[Any, dict[str, Any]], str]) -> Callable[..., str]:
    """A method ``name(self, <typed args>) -> str`` whose body is ``call(self, arguments)``.

    Raises:
        ToolSchemaError: the name is not an identifier, or an argument has no JSON type.

    >>> m = make_tool_method("guess", "Guess a word.", {"properties": {"word": {"type": "string",
    ...     "description": "five letters"}}, "required": ["word"]}, lambda self, args: args["word"].upper())
    >>> m(None, word="crane"), str(inspect.signature(m))
    ('CRANE', '(self, word: str) -> str')
    """
    if not name.isidentifier() or keyword.iskeyword(name) or name.startswith("_") or name in ("reset", "get_reward"):
        raise ToolSchemaError(f"tool name {name!r} cannot be a method name; rename the tool (letters, digits, _; "
                              "not reset/get_reward; not starting with _)")
    props: dict[str, Any] = dict(input_schema.get("properties") or {})
    required = set(input_schema.get("required") or [])
    params = [inspect.Parameter("self", inspect.Parameter.POSITIONAL_OR_KEYWORD)]
    annotations: dict[str, Any] = {}
    lines = []
    for arg, schema in sorted(props.items(), key=lambda kv: kv[0] not in required):
        if not arg.isidentifier() or keyword.iskeyword(arg):
            raise ToolSchemaError(f"tool {name!r}: argument {arg!r} is not a Python identifier; rename it")
        hint = _type(name, arg, schema)
        if arg in required:
            param = inspect.Parameter(arg, inspect.Parameter.POSITIONAL_OR_KEYWORD, annotation=hint)
        else:
            hint = hint | None
            param = inspect.Parameter(arg, inspect.Parameter.POSITIONAL_OR_KEYWORD, annotation=hint,
                                      default=schema.get("default"))
        params.append(param)
        annotations[arg] = hint
        text = str(schema.get("description") or schema.get("title") or arg).replace("\n", " ")
        lines.append(f"    {arg}: {text}")
    annotations["return"] = str
    signature = inspect.Signature(params, return_annotation=str)

    def method(self: Any, *args: Any, **kwargs: Any) -> str:
        bound = signature.bind(self, *args, **kwargs)
        bound.apply_defaults()
        arguments = {k: v for k, v in bound.arguments.items() if k != "self" and not (v is None and k not in required)}
        return call(self, arguments)

    method.__name__ = method.__qualname__ = name
    doc = (description or f"Call the env's {name} tool.").strip()
    method.__doc__ = doc + ("\n\nArgs:\n" + "\n".join(lines) if lines else "")
    method.__signature__ = signature  # type: ignore[attr-defined]
    method.__annotations__ = annotations
    return method
