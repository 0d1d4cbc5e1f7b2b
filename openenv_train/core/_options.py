"""Config dataclasses written once: each field's help (and its command-line form) in its ``metadata``.

A field declared with :func:`option` is a command-line option too: ``openenv-train serve``'s options are
generated from :class:`~openenv_train.server.ServerConfig` (``cli`` builds them with :func:`config_options`),
and a launcher turns values back into that command line with :func:`config_argv`.
"""

from __future__ import annotations

import dataclasses
import types
import typing
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

__all__ = ["ConfigOption", "config_argv", "config_options", "option"]


def option(help: str, *, flag: str | None = None, cli: bool = True, hidden: bool = False,  # noqa: A002 (TRL's name)
           envvar: str | None = None, none_as: Any = None) -> dict[str, Any]:
    """A field's ``metadata``: its help text and how it appears on the command line.

    Args:
        help: what the field means (the docs and the ``--help`` of its option).
        flag: the option's name; default ``--`` and the field name with dashes.
        cli: whether the field is a command-line option at all.
        hidden: leave it out of ``--help`` (internal options).
        envvar: an environment variable the option falls back to.
        none_as: the command-line value that stands for None (e.g. ``0`` for "never").
    """
    return {"help": help, "flag": flag, "cli": cli, "hidden": hidden, "envvar": envvar, "none_as": none_as}


@dataclass(frozen=True)
class ConfigOption:
    """One field of a config dataclass as a command-line option."""

    name: str
    flag: str
    type: Any
    default: Any
    help: str
    hidden: bool = False
    envvar: str | None = None
    none_as: Any = None

    def to_cli(self, value: Any) -> Any:
        """The field's value as the command line writes it."""
        return self.none_as if value is None and self.none_as is not None else value

    def from_cli(self, value: Any) -> Any:
        """A command-line value as the field's."""
        return None if self.none_as is not None and value == self.none_as else value


def _default(f: dataclasses.Field[Any]) -> Any:
    if f.default is not dataclasses.MISSING:
        return f.default
    if f.default_factory is not dataclasses.MISSING:
        return f.default_factory()
    return None


def _without_none(hint: Any) -> Any:
    if typing.get_origin(hint) in (typing.Union, types.UnionType):
        rest = [a for a in typing.get_args(hint) if a is not type(None)]
        if len(rest) == 1:
            return rest[0]
    return hint


def config_options(cls: type) -> list[ConfigOption]:
    """The command-line options of config dataclass ``cls``, in field order."""
    hints = typing.get_type_hints(cls)
    found = []
    for f in dataclasses.fields(cls):
        meta = f.metadata
        if "help" not in meta or not meta.get("cli", True):
            continue
        none_as = meta.get("none_as")
        hint = _without_none(hints[f.name]) if none_as is not None else hints[f.name]
        entry = ConfigOption(f.name, meta.get("flag") or "--" + f.name.replace("_", "-"), hint, None, meta["help"],
                             bool(meta.get("hidden")), meta.get("envvar"), none_as)
        found.append(dataclasses.replace(entry, default=entry.to_cli(_default(f))))
    return found


def config_argv(cls: type, values: Mapping[str, Any]) -> list[str]:
    """The command-line options that set ``values`` (field name -> value) of config dataclass ``cls``.

    None values are left out (the option's default applies), unless the option writes None as a value.

    Raises:
        ValueError: a name is not a command-line option of ``cls``.
    """
    known = {o.name: o for o in config_options(cls)}
    argv: list[str] = []
    for name, value in values.items():
        entry = known.get(name)
        if entry is None:
            raise ValueError(f"{name!r} is not a command-line option of {cls.__name__}; the options are: "
                             f"{', '.join(known)}")
        value = entry.to_cli(value)
        if value is None:
            continue
        if entry.type is bool:
            argv.append(entry.flag if value else "--no-" + entry.flag[2:])
        else:
            argv += [entry.flag, str(value)]
    return argv
