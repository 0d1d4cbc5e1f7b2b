"""Web views: the env playground of ``serve --web`` and the trace viewer of ``openenv-train view``.

Both are plain HTML/JS/CSS shipped in ``static/`` (no CDN, no build step). The viewer's JSON API and
HTTP app load pyarrow lazily, so importing this package stays cheap. ``Asset`` (a non-JSON answer) moved to
:mod:`openenv_train.http`; it still imports from here for one release, with a deprecation warning.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..core import lazy_attributes
from ._static import read_static, redirect

if TYPE_CHECKING:
    from ._trace_index import SourceError, TraceIndex
    from ._viewer import ViewerApi, ViewerServer

__all__ = [
    "SourceError",
    "TraceIndex",
    "ViewerApi",
    "ViewerServer",
    "read_static",
    "redirect",
]

__getattr__, __dir__ = lazy_attributes(
    __name__,
    lazy={"SourceError": "._trace_index", "TraceIndex": "._trace_index", "ViewerApi": "._viewer", "ViewerServer": "._viewer"},
    moved={"Asset": "openenv_train.http"},
)
