"""Server-sent events framing (``text/event-stream``): encode one ``data:`` event, decode a stream's lines.

Pure functions over str and bytes; the endpoint writes events with :func:`sse_event`, clients of an
OpenAI-compatible server read them back with :class:`SseDecoder`.
"""

from __future__ import annotations

__all__ = ["SSE_DONE", "SseDecoder", "sse_event"]

#: The payload OpenAI's streams end with (``data: [DONE]``).
SSE_DONE = "[DONE]"


def sse_event(data: str, event: str | None = None) -> bytes:
    """One event carrying ``data`` (each line of it becomes a ``data:`` line), named ``event`` when given
    (Anthropic's and the Responses API's streams name every event; OpenAI's chat stream names none).

    >>> sse_event('{"a": 1}')
    b'data: {"a": 1}\\n\\n'
    >>> sse_event('{}', 'message_stop')
    b'event: message_stop\\ndata: {}\\n\\n'
    >>> sse_event('a\\nb')
    b'data: a\\ndata: b\\n\\n'
    """
    head = f"event: {event}\n" if event else ""
    if "\n" not in data:  # one line: all JSON written without indent (the endpoint's every event)
        return f"{head}data: {data}\n\n".encode()
    return (head + "".join(f"data: {line}\n" for line in data.split("\n"))).encode() + b"\n"


class SseDecoder:
    """Feed it a stream's lines (without their line ends); it returns each event's data when the event ends.

    >>> d = SseDecoder()
    >>> [d.feed(line) for line in ["data: a", "data: b", ": comment", "", "data: [DONE]", ""]]
    [None, None, None, 'a\\nb', None, '[DONE]']
    """

    def __init__(self) -> None:
        self._data: list[str] = []

    def feed(self, line: str) -> str | None:
        """Take one line; at the blank line that ends an event with data, return that data."""
        if not line:
            data, self._data = self._data, []
            return "\n".join(data) if data else None
        if line.startswith(":"):
            return None  # a comment (keep-alive)
        name, _, value = line.partition(":")
        if name == "data":
            self._data.append(value[1:] if value.startswith(" ") else value)
        return None  # event:, id:, retry: are not used by OpenAI's streams
