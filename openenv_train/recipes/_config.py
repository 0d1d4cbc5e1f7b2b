"""Load a recipe's dataclass config from YAML plus ``key=value`` overrides."""

from __future__ import annotations

import dataclasses
import typing
from pathlib import Path
from typing import Any, TypeVar

import yaml

__all__ = ["load_config"]

T = TypeVar("T")


def _coerce(value: str, kind: Any) -> Any:
    if kind is bool:
        if value.lower() in ("1", "true", "yes", "on"):
            return True
        if value.lower() in ("0", "false", "no", "off"):
            return False
        raise ValueError(f"expected a boolean, got {value!r}")
    if kind in (int, float, str):
        return kind(value)
    return yaml.safe_load(value)


def load_config(cls: type[T], path: str | Path | None = None, overrides: list[str] | None = None) -> T:
    """Build ``cls`` from its defaults, then a YAML file, then ``key=value`` overrides.

    Raises:
        ValueError: an unknown key or a value of the wrong type, naming the key and the fix.
    """
    fields = {f.name: f for f in dataclasses.fields(cls)}  # type: ignore[arg-type]
    hints = typing.get_type_hints(cls)
    values: dict[str, Any] = {}
    if path is not None:
        loaded = yaml.safe_load(Path(path).read_text()) or {}
        if not isinstance(loaded, dict):
            raise ValueError(f"{path}: expected a mapping of option names to values")
        values.update(loaded)
    for item in overrides or []:
        key, sep, raw = item.partition("=")
        if not sep:
            raise ValueError(f"override {item!r} is not key=value")
        if key not in fields:
            raise ValueError(f"unknown option {key!r}; options: {', '.join(fields)}")
        try:
            values[key] = _coerce(raw, hints[key])
        except ValueError as exc:
            raise ValueError(f"option {key}: {exc}") from None
    unknown = sorted(set(values) - set(fields))
    if unknown:
        raise ValueError(f"unknown option(s) {', '.join(unknown)} in {path}; options: {', '.join(fields)}")
    return cls(**values)
