"""The command line the GRPO recipes share: ``--config``, ``--resume RUN_DIR`` and ``section.key=value`` settings."""

from __future__ import annotations

import argparse
import logging
from collections.abc import Callable
from typing import Any, TypeVar

from rich.console import Console

from ._config import load_run_config
from ._training import quiet_libraries

T = TypeVar("T")


def recipe_main(cls: type[T], run: Callable[..., Any], argv: list[str] | None, *, module: str, doc: str | None,
                example: str, errors: tuple[type[BaseException], ...] = ()) -> int:
    """Parse ``argv`` into a ``cls`` config, run ``run(cfg, resume=...)`` and return the exit code (1, with the
    message, on a ``ValueError`` or one of ``errors``)."""
    parser = argparse.ArgumentParser(prog=f"python -m {module}", description=(doc or "").split("\n\n")[0])
    parser.add_argument("--config", help="YAML file of settings (default: the embedded defaults)")
    parser.add_argument("--resume", metavar="RUN_DIR", help="continue this run from its last finished phase")
    parser.add_argument("overrides", nargs="*", help=f"section.key=value settings, e.g. {example}")
    args = parser.parse_args(argv)
    cfg = load_run_config(cls, parser, args.config, args.overrides, args.resume)
    logging.basicConfig(level=logging.WARNING)
    quiet_libraries(getattr(cfg, "verbose", False))
    caught: tuple[type[BaseException], ...] = (ValueError, *errors)
    try:
        run(cfg, resume=bool(args.resume))
    except caught as exc:
        Console().print(f"[bold red]error:[/] {exc}")
        return 1
    return 0
