"""A small HTTP/1.1 core on h11: request/response types, limits, one connection class, a JSON server, tasks.

:class:`HttpConnection` is the h11 connection both servers build on (request parsing, body limit, slowloris
timers, the send path, async answers); :class:`HttpServer` serves a handler with it (the policy endpoint), and
the env server's connection subclasses it to add the ``/ws`` upgrade; an answer may be an :class:`HttpStream`
(chunked, e.g. server-sent events framed by :func:`sse_event`) or an :class:`Asset` (a static file).
:class:`TaskSet` keeps their background tasks. Imports only ``openenv_train.core``.
"""

from ._asset import Asset
from ._connection import HttpConnection, HttpLimits, HttpRequest, HttpResponse, HttpStream
from ._server import Handler, HttpServer
from ._sse import SSE_DONE, SseDecoder, sse_event
from ._tasks import TaskSet

__all__ = ["SSE_DONE", "Asset", "Handler", "HttpConnection", "HttpLimits", "HttpRequest", "HttpResponse", "HttpServer",
           "HttpStream", "SseDecoder", "TaskSet", "sse_event"]
