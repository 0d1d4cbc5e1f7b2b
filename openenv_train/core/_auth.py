"""Shared-secret (bearer token) authentication of the env server and the policy endpoint.

A token is read from an argument, a file or an environment variable; it is compared in constant time
and never logged, echoed in errors or shown in a repr.
"""

from __future__ import annotations

import base64
import binascii
import hmac
import ipaddress
import logging
import os
import re

__all__ = [
    "POLICY_TOKEN_ENV",
    "TOKEN_ENV",
    "bearer_of",
    "is_loopback",
    "resolve_token",
    "token_matches",
    "unauthorized_message",
    "warn_if_exposed",
]

#: Environment variable holding the env server's token (read by servers and by this project's clients).
TOKEN_ENV = "OPENENV_TRAIN_TOKEN"
#: Environment variable holding the policy endpoint's token.
POLICY_TOKEN_ENV = "OPENENV_TRAIN_POLICY_TOKEN"

# Printable ASCII without spaces (it travels in a header); no ':' so that "token:session" splits unambiguously.
_TOKEN_RE = re.compile(r"[\x21-\x39\x3b-\x7e]+")


def check_token(token: str, source: str) -> str:
    """Validate a token's characters; ``source`` names where it came from (never the token itself)."""
    if not _TOKEN_RE.fullmatch(token):
        raise ValueError(
            f"the token from {source} is empty or has spaces, ':' or non-ASCII characters; use printable ASCII "
            "without ':' (e.g. python -c 'import secrets; print(secrets.token_urlsafe(32))')"
        )
    return token


def resolve_token(token: str | None, token_file: str | os.PathLike[str] | None, env_var: str) -> str | None:
    """The token in force: ``token``, else the first line of ``token_file``, else ``$env_var``; "" means none.

    Raises:
        ValueError: the file cannot be read, or the token is empty or malformed.
    """
    if token is not None and token_file is not None:
        raise ValueError("give token or token_file, not both")
    if token == "":
        return None  # explicitly off, even when the environment variable is set
    if token is not None:
        return check_token(token, "the token argument")
    if token_file is not None:
        try:
            with open(token_file, encoding="utf-8") as f:
                text = f.read().strip()
        except (OSError, UnicodeDecodeError) as exc:
            raise ValueError(f"cannot read the token file {os.fspath(token_file)}: {exc}") from None
        return check_token(text, f"the token file {os.fspath(token_file)}")
    value = os.environ.get(env_var, "").strip()
    return check_token(value, f"${env_var}") if value else None


def token_matches(given: str | None, token: str) -> bool:
    """Constant-time comparison of a presented token with the configured one."""
    if given is None:
        return False
    return hmac.compare_digest(given.encode("utf-8", "surrogateescape"), token.encode())


def bearer_of(authorization: str | bytes | None) -> str | None:
    """The secret an ``Authorization`` header carries: ``Bearer <token>``, or the password of ``Basic``.

    ``Basic`` is accepted so that clients which only take a URL can authenticate with
    ``http://user:<token>@host:port`` (websockets and httpx turn the URL's password into Basic auth).
    """
    if authorization is None:
        return None
    if isinstance(authorization, bytes):
        authorization = authorization.decode("latin-1")
    scheme, _, value = authorization.strip().partition(" ")
    scheme, value = scheme.lower(), value.strip()
    if scheme == "bearer":
        return value or None
    if scheme == "basic":
        try:
            decoded = base64.b64decode(value, validate=True).decode("utf-8")
        except (binascii.Error, UnicodeDecodeError):
            return None
        return decoded.partition(":")[2] or None
    return None


def unauthorized_message(given: str | None, *, env_var: str, what: str = "this server") -> str:
    """The text of a 401: what was wrong and how to send the token (which it never contains)."""
    if given is None:
        return (f"{what} requires a token: send the header 'Authorization: Bearer <token>' (EnvClient(token=...) "
                f"or set ${env_var} for this project's clients; OpenEnv clients can use http://user:<token>@host:port)")
    return (f"the token sent is not {what}'s token; send the one the server was started with "
            f"(--token-file or ${env_var})")


def is_loopback(host: str) -> bool:
    """Whether ``host`` only accepts connections from this machine."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False  # a hostname or "" (all interfaces): assume it is reachable from elsewhere


def warn_if_exposed(log: logging.Logger, what: str, host: str, port: int | None, *, authenticated: bool,
                    option: str) -> None:
    """Warn when a server without a token listens on an address other machines can reach."""
    if authenticated or is_loopback(host):
        return
    log.warning(
        "%s listens on %s:%s without a token: anyone who can reach this address can use it; "
        "set %s (or bind --host 127.0.0.1)", what, host or "0.0.0.0", port, option,
    )
