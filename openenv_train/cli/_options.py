"""A command's options generated from a config dataclass's fields (help written once, in the field's metadata)."""

from __future__ import annotations

import dataclasses
import inspect
from collections.abc import Callable, Mapping
from typing import Annotated, Any

import typer

from ..core import ConfigOption, config_options

__all__ = ["config_values", "with_config_options"]


def _selected(cls: type, defaults: Mapping[str, Any] | None, flags: Mapping[str, str]) -> list[ConfigOption]:
    """The command-line options of ``cls``: all, or those named in ``defaults`` with the command's defaults."""
    found = config_options(cls)
    if defaults is None:
        return [dataclasses.replace(o, flag=flags.get(o.name, o.flag)) for o in found]
    known = {o.name: o for o in found}
    unknown = sorted(set(defaults) - set(known))
    if unknown:  # a programming error: name a field that is a command-line option
        raise ValueError(f"{', '.join(unknown)}: not command-line options of {cls.__name__}")
    return [dataclasses.replace(known[name], default=known[name].to_cli(value), flag=flags.get(name, known[name].flag))
            for name, value in defaults.items()]


def _parameter(o: ConfigOption) -> inspect.Parameter:
    flag = f"{o.flag}/--no-{o.flag[2:]}" if o.type is bool else o.flag
    return inspect.Parameter(o.name, inspect.Parameter.KEYWORD_ONLY, default=o.default, annotation=Annotated[
        o.type, typer.Option(flag, help=o.help, hidden=o.hidden, envvar=o.envvar)])


def with_config_options(cls: type, *, at: int, defaults: Mapping[str, Any] | None = None,
                        flags: Mapping[str, str] | None = None) -> Callable[[Callable[..., None]], Callable[..., None]]:
    """Give a typer command (which takes ``**config``) options made from the fields of config dataclass ``cls``.

    Args:
        cls: the config dataclass; each field declared with :func:`~openenv_train.core.option` is an option.
        at: where the options go among the command's own parameters (for ``--help``'s order).
        defaults: only these fields, with these defaults (the command's own); None: every field, its default.
        flags: option names other than ``--field-name`` (an existing command's flags).

    The command reads the values with :func:`config_values`.
    """
    def decorate(command: Callable[..., None]) -> Callable[..., None]:
        signature = inspect.signature(command, eval_str=True)
        params = [p for p in signature.parameters.values() if p.kind is not inspect.Parameter.VAR_KEYWORD]
        generated = [_parameter(o) for o in _selected(cls, defaults, flags or {})]
        params = [*params[:at], *generated, *(p.replace(kind=inspect.Parameter.KEYWORD_ONLY) for p in params[at:])]
        command.__signature__ = signature.replace(parameters=params)  # type: ignore[attr-defined]
        return command

    return decorate


def config_values(cls: type, config: Mapping[str, Any]) -> dict[str, Any]:
    """The field values of ``cls`` among a command's ``**config`` (command-line values read back as the field's)."""
    return {o.name: o.from_cli(config[o.name]) for o in config_options(cls) if o.name in config}
