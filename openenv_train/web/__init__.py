"""Web views: the env playground of ``serve --web`` and the trace viewer of ``openenv-train view``.

Both are plain HTML/JS/CSS shipped in ``static/`` (no CDN, no build step). The viewer's JSON API and
HTTP app load pyarrow lazily, so importing this package stays cheap.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ._static import Asset, read_static, redirect

if TYPE_CHECKING:
    from ._dataset import SourceError, TraceIndex
    from ._viewer import ViewerApi, ViewerServer

__all__ = [
    "Asset",
    "SourceError",
    "TraceIndex",
    "ViewerApi",
    "ViewerServer",
    "read_static",
    "redirect",
]


def __getattr__(name: str) -> Any:
    if name in ("SourceError", "TraceIndex"):
        from . import _dataset

        return getattr(_dataset, name)
    if name in ("ViewerApi", "ViewerServer"):
        from . import _viewer

        return getattr(_viewer, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
