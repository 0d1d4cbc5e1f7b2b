"""Generated env families (``openspiel/<game>``, ``textarena/<game>``, ``browser/<task>``): their per-entry classes."""

from __future__ import annotations

from typing import TypeVar, cast

__all__ = ["camel", "family_client"]

C = TypeVar("C", bound=type)


def camel(key: str, sep: str = "_") -> str:
    """A family entry's key as the middle of its class names.

    Example:
        >>> camel("dots_and_boxes"), camel("click-button", "-")
        ('DotsAndBoxes', 'ClickButton')
    """
    return "".join(word.capitalize() for word in key.split(sep))


def family_client(base: C, env: str, name: str, module: str) -> C:
    """The typed client class ``name`` of catalog entry ``env``: a subclass of the family's ``base`` client."""
    return cast(C, type(name, (base,), {"__doc__": f"Client of {env}.", "__module__": module}, env=env))
