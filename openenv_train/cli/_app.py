"""``openenv-train``: typer app; each command lives in a module of its own."""

from __future__ import annotations

import sys

import typer
from rich.console import Console

from ..core import OpenEnvTrainError

__all__ = ["app", "main"]

app = typer.Typer(
    name="openenv-train",
    help="Serve OpenEnv-compatible environments and turn their episodes into training data.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
err = Console(stderr=True)


def fail(message: str, code: int = 1) -> typer.Exit:
    """Print an error without a traceback and return the Exit to raise."""
    err.print(f"[bold red]error:[/] {message}", highlight=False, soft_wrap=True)
    return typer.Exit(code)


def _register_commands() -> None:
    """Import every command module of this package (each registers its commands on ``app``)."""
    import importlib
    import pkgutil

    from . import __path__ as here

    for module in pkgutil.iter_modules(here):
        if module.name.startswith("_") and module.name not in ("_app", "__main__") and not module.ispkg:
            importlib.import_module(f"{__package__}.{module.name}")


def main(argv: list[str] | None = None) -> int:
    """Run the CLI; returns the exit code (0 ok, 1 failed, 2 bad usage)."""
    _register_commands()
    try:
        result = app(args=argv if argv is not None else sys.argv[1:], standalone_mode=False)
    except typer.Exit as exc:
        return exc.exit_code
    except OpenEnvTrainError as exc:
        fail(str(exc))
        return 1
    except (typer.Abort, KeyboardInterrupt):
        return 130
    except Exception as exc:  # usage errors (typer vendors click as typer._click, not click.ClickException)
        show, code = getattr(exc, "show", None), getattr(exc, "exit_code", None)
        if callable(show) and isinstance(code, int):
            show()
            return code
        raise
    return result if isinstance(result, int) else 0
