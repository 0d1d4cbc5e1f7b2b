"""Load a recipe's dataclass config from YAML plus ``key=value`` overrides (dotted keys reach nested sections)."""

from __future__ import annotations

import argparse
import dataclasses
import types
import typing
from pathlib import Path
from typing import Any, TypeVar

import yaml

__all__ = ["config_from_argv", "config_to_dict", "load_config", "load_run_config"]

T = TypeVar("T")


def _is_section(kind: Any) -> bool:
    return isinstance(kind, type) and dataclasses.is_dataclass(kind)


def _hints(cls: Any) -> dict[str, Any]:
    names = {f.name for f in dataclasses.fields(cls)}
    return {k: v for k, v in typing.get_type_hints(cls).items() if k in names}


def _check_keys(cls: Any, values: dict[str, Any], where: str) -> None:
    """Reject keys the dataclass (or one of its sections) does not have, listing the ones it has."""
    hints = _hints(cls)
    for key in values:
        if not isinstance(key, str):
            raise ValueError(f"option names must be text, got {key!r} in {where[:-1] or 'the top level'}")
    unknown = sorted(set(values) - set(hints))
    if unknown:
        names = ", ".join(f"{where}{k}" for k in unknown)
        raise ValueError(f"unknown option(s) {names}; options{' of ' + where[:-1] if where else ''}: "
                         f"{', '.join(hints)}")
    for key, value in values.items():
        if _is_section(hints[key]):
            if not isinstance(value, dict):
                raise ValueError(f"option {where}{key} is a section: give a mapping of its options "
                                 f"({', '.join(_hints(hints[key]))}), got {value!r}")
            _check_keys(hints[key], value, f"{where}{key}.")


def _field_default(f: dataclasses.Field[Any]) -> Any:
    if f.default_factory is not dataclasses.MISSING:
        return f.default_factory()
    return None if f.default is dataclasses.MISSING else f.default


def _with_defaults(cls: Any, given: dict[str, Any], default: Any) -> dict[str, Any]:
    """``given`` (options of ``cls``) completed, section by section, with the fields of ``default`` it leaves out.

    A section given in part keeps the rest of its parent's default (what the parent's ``default_factory``
    builds, e.g. a recipe's own pool sizes), not the section class's defaults.
    """
    hints, out = _hints(cls), dict(given)
    for f in dataclasses.fields(cls):
        if not f.init:
            continue
        own = getattr(default, f.name) if default is not None else _field_default(f)
        if f.name in given:
            if _is_section(hints[f.name]) and isinstance(given[f.name], dict):
                out[f.name] = _with_defaults(hints[f.name], given[f.name], own)
        elif default is not None:
            out[f.name] = own
    return out


def _override(cls: Any, values: dict[str, Any], item: str) -> None:
    key, sep, raw = item.partition("=")
    if not sep:
        raise ValueError(f"override {item!r} is not key=value (nested options are dotted: section.option=value)")
    *sections, name = key.split(".")
    target, kind, where = values, cls, ""
    for section in sections:
        hints = _hints(kind)
        if section not in hints or not _is_section(hints[section]):
            sections_ = [k for k, v in hints.items() if _is_section(v)]
            raise ValueError(f"unknown section {where}{section!r} in {key!r}; sections"
                             f"{' of ' + where[:-1] if where else ''}: {', '.join(sections_) or 'none'}")
        target = target.setdefault(section, {})
        if not isinstance(target, dict):
            raise ValueError(f"option {where}{section} is a section, not a value")
        kind, where = hints[section], f"{where}{section}."
    hints = _hints(kind)
    if name not in hints:
        raise ValueError(f"unknown option {key!r}; options{' of ' + where[:-1] if where else ''}: {', '.join(hints)}")
    # str options keep the text as typed; everything else is read as YAML (numbers, lists, null, mappings)
    kind = hints[name]
    value = raw if kind is str else yaml.safe_load(raw)
    optional_text = typing.get_origin(kind) in (typing.Union, types.UnionType) and str in typing.get_args(kind)
    if value is not None and not isinstance(value, str) and optional_text:
        value = raw  # an optional text option given a number-like text: keep the text
    target[name] = value


def _validation_message(exc: Any) -> str:
    parts = []
    for error in exc.errors():
        loc = ".".join(str(p) for p in error["loc"])
        given = error.get("input")
        got = "" if isinstance(given, dict) else f" (got {given!r})"  # a whole section says less than the message
        parts.append(f"option {loc}: {error['msg']}{got}" if loc else error["msg"])
    return "; ".join(parts)


def load_config(cls: type[T], path: str | Path | None = None, overrides: list[str] | None = None) -> T:
    """Build ``cls`` from its defaults, then a YAML file, then ``key=value`` overrides.

    Sections are nested dataclasses: YAML mappings in the file, dotted keys in overrides
    (``grpo.learning_rate=1e-5``). A section given in part keeps its other values from the section's default
    (the field's ``default_factory``, e.g. the recipe's own pool sizes). Values are checked against the field types.

    Raises:
        ValueError: an unknown key (the message lists the valid ones), a value of the wrong type, or a file
            that is not a YAML mapping.
    """
    import pydantic

    values: dict[str, Any] = {}
    if path is not None:
        try:
            loaded = yaml.safe_load(Path(path).read_text())
        except (yaml.YAMLError, ValueError) as exc:  # ValueError: e.g. an integer of more than 4300 digits
            raise ValueError(f"{path}: not valid YAML: {exc}") from None
        loaded = {} if loaded is None else loaded
        if not isinstance(loaded, dict):
            raise ValueError(f"{path}: expected a mapping of option names to values, got {type(loaded).__name__}")
        values.update(loaded)
    try:
        _check_keys(cls, values, "")
    except ValueError as exc:
        raise ValueError(f"{path}: {exc}" if path is not None else str(exc)) from None
    for item in overrides or []:
        try:
            _override(cls, values, item)
        except (yaml.YAMLError, ValueError) as exc:
            raise ValueError(f"override {item[:200]!r}: {exc}") from None
    try:
        return pydantic.TypeAdapter(cls).validate_python(_with_defaults(cls, values, None))
    except pydantic.ValidationError as exc:
        raise ValueError(_validation_message(exc)) from None


def load_run_config(cls: type[T], parser: Any, config_path: str | None, overrides: list[str],
                    resume: str | None) -> T:
    """A recipe's config from ``--config`` and overrides; with ``resume``, the run folder's own ``config.yaml`` and
    its place. Bad settings exit through ``parser.error`` (an ``argparse.ArgumentParser``) with the message."""
    overrides = list(overrides)
    if resume:
        run_dir = Path(resume)
        if not (run_dir / "config.yaml").exists():
            parser.error(f"--resume {run_dir}: no config.yaml there (not a run directory of this recipe)")
        config_path = config_path or str(run_dir / "config.yaml")
        overrides += [f"output.dir={run_dir.parent}", f"output.name={run_dir.name}"]
    try:
        return load_config(cls, config_path, overrides)
    except (ValueError, OSError) as exc:
        parser.error(str(exc))
        raise  # parser.error exits; this keeps type checkers informed


def config_to_dict(config: Any) -> dict[str, Any]:
    """A config as plain data (for ``summary.json`` and the run's saved ``config.yaml``)."""
    return dataclasses.asdict(config)


def config_from_argv(cls: type[T], argv: list[str] | None, *, module: str, doc: str | None, example: str) -> T:
    """A recipe's command line (``[--config FILE] [key=value ...]``) as its config; bad usage exits 2.

    Args:
        cls: the recipe's config dataclass.
        argv: the arguments (None: ``sys.argv[1:]``).
        module: the recipe's module name, for ``--help``.
        doc: the recipe's docstring (its first paragraph describes the command).
        example: example overrides for ``--help``.
    """
    parser = argparse.ArgumentParser(prog=f"python -m {module}", description=(doc or "").split("\n\n")[0])
    parser.add_argument("--config", help=f"YAML file of {cls.__name__} options")
    parser.add_argument("overrides", nargs="*", help=f"key=value options, e.g. {example}")
    args = parser.parse_args(argv)
    try:
        return load_config(cls, args.config, args.overrides)
    except (ValueError, OSError) as exc:
        parser.error(str(exc))
