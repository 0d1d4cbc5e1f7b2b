"""Static files shipped in this package (``static/<app>/...``) and the HTTP answer that carries one."""

from __future__ import annotations

import posixpath
from functools import lru_cache
from importlib import resources

from ..http import Asset

__all__ = ["CONTENT_TYPES", "read_static", "redirect"]

CONTENT_TYPES = {
    ".html": "text/html; charset=utf-8",
    ".js": "text/javascript; charset=utf-8",
    ".css": "text/css; charset=utf-8",
    ".json": "application/json",
    ".svg": "image/svg+xml",
    ".png": "image/png",
    ".ico": "image/x-icon",
}


def redirect(location: str) -> Asset:
    """A 308 redirect (method and body kept)."""
    return Asset(b"", "text/plain; charset=utf-8", 308, (("location", location),))


@lru_cache(maxsize=64)
def read_static(app: str, name: str) -> Asset | None:
    """The file ``static/<app>/<name>`` of this package, or None when there is no such file.

    Names with ``..``, absolute parts or unknown extensions are refused (None), so a URL can never reach
    a file outside the app's folder.

    >>> read_static("viewer", "").content_type
    'text/html; charset=utf-8'
    >>> [read_static("viewer", name) for name in ("../_static.py", "/etc/passwd", "a/../index.html", "x.py")]
    [None, None, None, None]
    """
    name = name or "index.html"
    clean = posixpath.normpath(name)
    if clean.startswith(("/", "..")) or "\\" in clean or clean != name:
        return None
    content_type = CONTENT_TYPES.get(posixpath.splitext(clean)[1])
    if content_type is None:
        return None
    path = resources.files(__package__).joinpath("static", app, *clean.split("/"))
    if not path.is_file():
        return None
    return Asset(path.read_bytes(), content_type)
