"""A rich progress bar whose description shows the pool's live metrics."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator

from ._metrics import PoolMetrics

__all__ = ["progress_bar"]


@contextlib.contextmanager
def progress_bar(show: bool, total: int | None, metrics: PoolMetrics) -> Iterator[Callable[[], None]]:
    """Yields ``advance()``; with ``show`` a rich bar counts episodes and shows :meth:`PoolMetrics.line`."""
    if not show:
        yield lambda: None
        return
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    columns = (TextColumn("episodes"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
               TextColumn("{task.description}"))
    with Progress(*columns, transient=False) as progress:
        task = progress.add_task(metrics.line(), total=total)

        def advance() -> None:
            progress.update(task, advance=1, description=metrics.line())

        yield advance
