"""A non-JSON answer (a static file, a redirect): bytes, content type, status and extra headers."""

from __future__ import annotations

from dataclasses import dataclass, field

from ._connection import HttpResponse

__all__ = ["Asset"]


@dataclass(frozen=True)
class Asset:
    """A non-JSON HTTP answer: raw bytes with their content type and any extra headers."""

    body: bytes
    content_type: str
    status: int = 200
    headers: tuple[tuple[str, str], ...] = field(default=())

    def header_list(self) -> list[tuple[str, str]]:
        """Content-type, cache policy and extra headers (content-length is the caller's)."""
        # no-cache: a page must never mix files of two versions after an upgrade
        return [("content-type", self.content_type), ("cache-control", "no-cache"), *self.headers]

    def response(self, status: int | None = None) -> HttpResponse:
        """This answer as an :class:`HttpResponse` (``status`` overrides the asset's own)."""
        return HttpResponse(self.status if status is None else status, self.body, self.header_list(),
                            content_type=None)
