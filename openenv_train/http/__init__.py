"""A small HTTP/1.1 core on h11: request/response types, limits, one connection class, a JSON server, tasks.

:class:`HttpConnection` is the h11 connection both servers build on (request parsing, body limit, slowloris
timers, the send path, async answers); :class:`HttpServer` serves a handler with it (the policy endpoint), and
the env server's connection subclasses it to add the ``/ws`` upgrade. :class:`TaskSet` keeps their background
tasks; :class:`Asset` is a non-JSON answer (a static file). Imports only ``openenv_train.core``.
"""

from ._asset import Asset
from ._connection import HttpConnection, HttpLimits, HttpRequest, HttpResponse
from ._server import Handler, HttpServer
from ._tasks import TaskSet

__all__ = ["Asset", "Handler", "HttpConnection", "HttpLimits", "HttpRequest", "HttpResponse", "HttpServer", "TaskSet"]
