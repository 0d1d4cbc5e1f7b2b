"""Errors of the policy side, each mapped to an HTTP status and an OpenAI-style error body.

::

    OpenEnvTrainError
    └── PolicyError                  500 server_error
        ├── InvalidRequest           400 invalid_request_error (bad JSON, bad field, unsupported option)
        │   └── ContextLengthExceeded    400, code context_length_exceeded
        ├── AuthenticationFailed     401 (an api_key is configured and the token is neither it nor a session)
        ├── NotFound                 404 (unknown route, unknown capture session)
        ├── TokenLimitExceeded       429, code max_tokens_per_session (a capture session used up its tokens)
        ├── BackendFailed            500 (the model failed on this request)
        ├── UpstreamFailed           502 (the upstream server failed or could not be reached)
        └── EngineUnavailable        503, code engine_restarted (the local engine process died holding the request)
"""

from __future__ import annotations

from typing import Any, ClassVar

from ..core import OpenEnvTrainError

__all__ = [
    "AuthenticationFailed",
    "BackendFailed",
    "ContextLengthExceeded",
    "EngineUnavailable",
    "InvalidRequest",
    "NotFound",
    "PolicyError",
    "TokenLimitExceeded",
    "UpstreamFailed",
]


class PolicyError(OpenEnvTrainError):
    """Root of the policy errors; ``status``, ``type``, ``param`` and ``code`` fill the error body."""

    status: ClassVar[int] = 500
    type: ClassVar[str] = "server_error"

    def __init__(self, message: str, *, param: str | None = None, code: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.param = param
        self.code = code

    def to_json(self) -> dict[str, Any]:
        """The OpenAI-style body: ``{"error": {"message", "type", "param", "code"}}``."""
        return {"error": {"message": self.message, "type": self.type, "param": self.param, "code": self.code}}

    def __reduce__(self) -> tuple[Any, ...]:
        # Errors cross from the engine process to the endpoint's: rebuilt with their fields, whatever the
        # subclass's __init__ takes.
        return _rebuild, (type(self), self.args, self.__dict__)


def _rebuild(cls: type[PolicyError], args: tuple[Any, ...], state: dict[str, Any]) -> PolicyError:
    error = cls.__new__(cls)
    Exception.__init__(error, *args)
    error.__dict__.update(state)
    return error


class InvalidRequest(PolicyError):
    """The request is malformed or asks for something this backend cannot do."""

    status = 400
    type = "invalid_request_error"


class ContextLengthExceeded(InvalidRequest):
    """The prompt does not fit in the model's context."""

    def __init__(self, prompt_tokens: int, context: int) -> None:
        super().__init__(
            f"the prompt has {prompt_tokens} tokens but the model's context is {context} tokens; "
            "send fewer or shorter messages (or serve a model with a longer context)",
            param="messages", code="context_length_exceeded",
        )
        self.prompt_tokens = prompt_tokens
        self.context = context


class AuthenticationFailed(PolicyError):
    """The bearer token is neither the server's api_key nor an open capture session."""

    status = 401
    type = "invalid_request_error"


class NotFound(PolicyError):
    """No such route, model or capture session."""

    status = 404
    type = "invalid_request_error"


class TokenLimitExceeded(PolicyError):
    """A capture session has used its ``max_tokens_per_session`` (prompt + completion tokens)."""

    status = 429
    type = "rate_limit_error"

    def __init__(self, session: str, used: int, limit: int) -> None:
        super().__init__(
            f"capture session {session} has used {used} tokens (prompt + completion), reaching this server's "
            f"max_tokens_per_session={limit}; end the episode and open a new capture session, or serve with a "
            "larger max_tokens_per_session",
            code="max_tokens_per_session",
        )
        self.used = used
        self.limit = limit

    def to_json(self) -> dict[str, Any]:
        body = super().to_json()
        body["error"].update(limit="max_tokens_per_session", value=self.limit, used=self.used)
        return body


class BackendFailed(PolicyError):
    """The model failed while answering this request (other requests are unaffected)."""


class UpstreamFailed(PolicyError):
    """The upstream OpenAI-compatible server failed, refused the request, or could not be reached."""

    status = 502
    type = "upstream_error"

    def __init__(self, message: str, *, upstream_status: int | None = None, code: str | None = None) -> None:
        super().__init__(message, code=code)
        self.upstream_status = upstream_status


class EngineUnavailable(PolicyError):
    """The local backend's engine process died while it held this request; a new engine was started, so the
    request may be sent again (the rollout pool retries the episode)."""

    status = 503
    type = "server_error"

    def __init__(self, message: str) -> None:
        super().__init__(message, code="engine_restarted")
