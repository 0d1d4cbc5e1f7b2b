"""A small HTTP/1.1 core on h11: request/response types, a keep-alive JSON server, and background tasks.

The policy endpoint serves its OpenAI-compatible API with :class:`HttpServer`; the env server (which adds the
``/ws`` upgrade) shares :class:`TaskSet`. Imports only ``openenv_train.core``.
"""

from ._server import Handler, HttpRequest, HttpResponse, HttpServer
from ._tasks import TaskSet

__all__ = ["Handler", "HttpRequest", "HttpResponse", "HttpServer", "TaskSet"]
