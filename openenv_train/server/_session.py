"""Sessions: one Environment instance each, the registry that caps and reaps them,
and the dispatch of decoded ``/ws`` messages to the instance."""

from __future__ import annotations

import asyncio
import inspect
import logging
import time
import uuid
from collections.abc import Awaitable, Callable
from concurrent.futures import Executor
from typing import Any, Final

from pydantic import ValidationError

from ..core import (
    ClientMessage,
    ErrorCode,
    Observation,
    ProtocolError,
    State,
    dumps,
    encode_server_message,
    observation_to_wire,
    validation_errors,
)
from ._environment import Environment, EnvSpecInfo

__all__ = ["CLOSE", "Reply", "Session", "SessionRegistry"]

log = logging.getLogger("openenv_train.server")

#: Reply meaning "end this session" (the ``close`` message).
CLOSE: Final = object()
_MISSING: Final = object()
#: What handling one message yields: a frame to send, an awaitable of one, or CLOSE.
Reply = Any


def execution_error(what: str, exc: BaseException) -> ProtocolError:
    """EXECUTION_ERROR for an exception the env raised (message = the exception text)."""
    text = str(exc) or type(exc).__name__
    return ProtocolError(ErrorCode.EXECUTION_ERROR, text, exception=type(exc).__name__, during=what)


class Session:
    """One Environment instance and what the server tracks about it."""

    __slots__ = ("id", "env", "info", "last_active", "busy", "closed", "kind", "attached", "close_pending", "_executor")

    def __init__(self, session_id: str, env: Environment[Any, Any, Any], info: EnvSpecInfo, kind: str,
                 executor: Executor | None) -> None:
        self.id = session_id
        self.env = env
        self.info = info
        self.kind = kind
        self.last_active = time.monotonic()
        self.busy = False
        self.closed = False
        #: A ``/ws?session_id=`` connection is attached (OpenEnv's sharing of an ``openenv/session/create`` session).
        self.attached = False
        #: ``openenv/session/close`` came while attached: the session closes when the WebSocket detaches.
        self.close_pending = False
        self._executor = executor

    def touch(self) -> None:
        """Mark the session active now (idle reaping counts from here)."""
        self.last_active = time.monotonic()

    def handle(self, msg: ClientMessage, mcp: Callable[[Any, Session | None], Any]) -> Reply:
        """Run one message on the env; raises ProtocolError for anything the client got wrong."""
        self.last_active = time.monotonic()
        kind = msg.type
        if kind == "step":
            return self.call("step", self.env.step, (self.parse_action(msg.data),), {}, self.observation_frame)
        if kind == "reset":
            return self.call("reset", self.env.reset, (), self.check_reset(msg.data), self.observation_frame)
        if kind == "state":
            return self.call("state", _read_state, (self.env,), {}, self.state_frame)
        if kind == "mcp":
            reply = mcp(msg.data, self)
            if inspect.isawaitable(reply):
                return _then(reply, _mcp_frame)
            return _mcp_frame(reply)
        return CLOSE

    def parse_action(self, data: dict[str, Any]) -> Any:
        """Validate action fields against the env's action type."""
        try:
            return self.info.action_adapter.validate_python(data)
        except ValidationError as exc:
            errors = validation_errors(exc)
            fields = ", ".join(".".join(map(str, e["loc"])) or "<action>" for e in errors)
            raise ProtocolError(
                ErrorCode.VALIDATION_ERROR,
                f"invalid action for {self.info.env_cls.__name__}: problem with {fields}; "
                f"a {self.info.action_name} has fields {', '.join(self.info.action_fields)}",
                errors=errors,
            ) from None

    def check_reset(self, data: dict[str, Any]) -> dict[str, Any]:
        """Check reset options against the env's ``reset`` signature; returns them validated.

        ``split``/``index`` (OpenEnv 0.10's task choice) become the task's own reset options, which win over a
        ``seed`` given beside them, unless ``reset`` names ``split`` itself.
        """
        if not data:
            return data
        if "split" in data and "split" not in self.info.reset_params:
            data = self._task_options(data)
        errors: list[dict[str, Any]] = []
        seed, episode_id = data.get("seed"), data.get("episode_id")
        if seed is not None and (not isinstance(seed, int) or isinstance(seed, bool)):  # no lax "5" or True
            errors.append({"loc": ["seed"], "msg": "Input should be a valid integer", "type": "int_type"})
        if episode_id is not None and not isinstance(episode_id, str):
            errors.append({"loc": ["episode_id"], "msg": "Input should be a valid string", "type": "string_type"})
        try:
            options = self.info.reset_model.model_validate(data)
        except ValidationError as exc:
            seen = {e["loc"][0] for e in errors}
            errors += [e for e in validation_errors(exc) if not e["loc"] or e["loc"][0] not in seen]
        if errors:
            names = ", ".join(sorted({str(e["loc"][0]) if e["loc"] else "<options>" for e in errors}))
            accepted = ", ".join(sorted(self.info.reset_params)) or "none"
            raise ProtocolError(
                ErrorCode.VALIDATION_ERROR,
                f"invalid reset options for {self.info.env_cls.__name__}: {names}; accepted options: {accepted}",
                errors=errors,
            )
        return {key: getattr(options, key) if key in self.info.reset_params else value for key, value in data.items()}

    def _task_options(self, data: dict[str, Any]) -> dict[str, Any]:
        rest = {k: v for k, v in data.items() if k not in ("split", "index")}
        split, index = data.get("split"), data.get("index", 0)
        problem = None
        if not isinstance(split, str):
            problem = ("split", "reset(split=..., index=...) needs split, a split name (GET /{env}/splits lists them)")
        elif isinstance(index, bool) or not isinstance(index, int):
            problem = ("index", "index must be an integer task index within the split")
        else:
            try:
                return {**rest, **self.env.task_reset_options(split, index)}
            except NotImplementedError:
                problem = ("split", f"{self.info.env_cls.__name__} declares no task splits, so reset takes no "
                                    "split/index; pass its own reset options instead")
            except (ValueError, IndexError) as exc:
                problem = ("split" if not isinstance(exc, IndexError) else "index", str(exc))
        raise ProtocolError(ErrorCode.VALIDATION_ERROR, f"invalid reset options: {problem[1]}",
                            errors=[{"loc": [problem[0]], "msg": problem[1], "type": "value_error"}])

    def call(self, what: str, fn: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any],
             encode: Callable[[Any], str]) -> Reply:
        """Call an env method: inline when quick, awaited when async, in a thread when blocking."""
        if self._executor is not None:
            loop = asyncio.get_running_loop()
            future = loop.run_in_executor(self._executor, lambda: _resolve_sync(fn(*args, **kwargs)))
            return _guard(what, future, encode)
        try:
            result = fn(*args, **kwargs)
        except ProtocolError:
            raise
        except Exception as exc:
            raise execution_error(what, exc) from exc
        if inspect.isawaitable(result):
            return _guard(what, result, encode)
        return encode(result)

    @staticmethod
    def observation_data(obs: Any) -> dict[str, Any]:
        """The wire payload of an observation the env returned (checked to be one)."""
        if not isinstance(obs, Observation):
            raise ProtocolError(
                ErrorCode.EXECUTION_ERROR,
                f"the env returned {type(obs).__name__}, expected an Observation instance",
            )
        return observation_to_wire(obs)

    @staticmethod
    def state_data(state: Any) -> dict[str, Any]:
        """The wire payload of the env's state (checked to be a State or a dict)."""
        if isinstance(state, State):
            return state.model_dump(mode="json")
        if isinstance(state, dict):
            return state
        raise ProtocolError(
            ErrorCode.EXECUTION_ERROR, f"the env's state is {type(state).__name__}, expected a State instance"
        )

    @staticmethod
    def observation_frame(obs: Any) -> str:
        return _encode("observation", Session.observation_data(obs))

    @staticmethod
    def state_frame(state: Any) -> str:
        return _encode("state", Session.state_data(state))


def _read_state(env: Environment[Any, Any, Any]) -> Any:
    return env.state


def _resolve_sync(result: Any) -> Any:
    if inspect.isawaitable(result):
        raise TypeError("a blocking env's methods must be plain functions, not coroutines")
    return result


def _encode(kind: str, data: dict[str, Any], *, envelope: bool = True) -> str:
    try:
        return encode_server_message(kind, data) if envelope else dumps(data)
    except (TypeError, ValueError) as exc:
        raise ProtocolError(
            ErrorCode.EXECUTION_ERROR, f"the env's {kind} is not JSON-serialisable: {exc}"
        ) from None


def payload_json(kind: str, data: dict[str, Any]) -> str:
    """``data`` as JSON without the ``{"type", "data"}`` envelope (what the HTTP routes answer)."""
    return _encode(kind, data, envelope=False)


def _mcp_frame(response: dict[str, Any]) -> str:
    return _encode("mcp", response)


async def _then(awaitable: Awaitable[Any], encode: Callable[[Any], str]) -> str:
    return encode(await awaitable)


async def _guard(what: str, awaitable: Awaitable[Any], encode: Callable[[Any], str]) -> str:
    try:
        result = await awaitable
    except ProtocolError:
        raise
    except Exception as exc:
        raise execution_error(what, exc) from exc
    return encode(result)


class SessionRegistry:
    """Creates, caps, reaps and closes sessions of one env class."""

    def __init__(self, env_factory: Callable[[], Environment[Any, Any, Any]], info: EnvSpecInfo, *,
                 max_sessions: int | None, executor: Executor | None, factory_name: str,
                 limit_hits: dict[str, int] | None = None) -> None:
        self.env_factory = env_factory
        self.limit_hits = limit_hits if limit_hits is not None else {}
        self.info = info
        self.max_sessions = max_sessions
        self.executor = executor
        self.factory_name = factory_name
        self.sessions: dict[str, Session] = {}
        self.created = 0
        self.reaped = 0

    @property
    def active(self) -> int:
        return len(self.sessions)

    def reserve(self) -> str:
        """Claim a slot (raising CAPACITY_REACHED when none is left) and return a session id."""
        if self.max_sessions is not None and len(self.sessions) >= self.max_sessions:
            self.limit_hits["max_sessions"] = self.limit_hits.get("max_sessions", 0) + 1
            raise ProtocolError(
                ErrorCode.CAPACITY_REACHED,
                f"server holds its maximum of {self.max_sessions} sessions; close a session or start "
                "the server with a larger --max-sessions",
                active_sessions=len(self.sessions),
                max_sessions=self.max_sessions,
            )
        return uuid.uuid4().hex

    def build_env(self) -> Environment[Any, Any, Any]:
        """Build an env instance, turning any failure into FACTORY_ERROR."""
        try:
            return self.env_factory()
        except Exception as exc:
            raise ProtocolError(
                ErrorCode.FACTORY_ERROR,
                f"could not build {self.factory_name}: {type(exc).__name__}: {exc}",
                factory_name=self.factory_name,
            ) from exc

    async def build_env_async(self) -> Environment[Any, Any, Any]:
        """:meth:`build_env`, in a worker thread for blocking envs."""
        if self.executor is None:
            return self.build_env()
        return await asyncio.get_running_loop().run_in_executor(self.executor, self.build_env)

    def create(self, kind: str) -> Session:
        """Build and register a session synchronously (quick env constructors)."""
        session_id = self.reserve()
        return self.add(session_id, self.build_env(), kind)

    async def create_async(self, kind: str) -> Session:
        """Build and register a session, constructing blocking envs in a worker thread."""
        session_id = self.reserve()
        if self.executor is None:
            return self.add(session_id, self.build_env(), kind)
        # Hold the slot while the constructor runs so the cap cannot be overshot.
        self.sessions[session_id] = None  # type: ignore[assignment]
        try:
            env = await self.build_env_async()
        finally:
            del self.sessions[session_id]
        return self.add(session_id, env, kind)

    def add(self, session_id: str, env: Environment[Any, Any, Any], kind: str) -> Session:
        session = Session(session_id, env, self.info, kind, self.executor)
        self.sessions[session_id] = session
        self.created += 1
        return session

    def get(self, session_id: str) -> Session | None:
        return self.sessions.get(session_id)

    def attach(self, session_id: str) -> Session:
        """Attach a WebSocket to the existing session ``session_id`` (``/ws?session_id=``, as OpenEnv 0.10).

        Raises:
            ProtocolError: SESSION_ERROR for an unknown id, a session still being built, or one that already has a
                WebSocket attached (OpenEnv's three refusals, worded as theirs).
        """
        session = self.sessions.get(session_id, _MISSING)
        if session is _MISSING:
            raise ProtocolError(ErrorCode.SESSION_ERROR, f"Unknown session_id: {session_id}; create one with "
                                "openenv/session/create (POST /mcp) or connect without session_id")
        if session is None:
            raise ProtocolError(ErrorCode.SESSION_ERROR, f"Session {session_id} is still initializing")
        assert isinstance(session, Session)
        if session.attached:
            raise ProtocolError(ErrorCode.SESSION_ERROR, f"Session {session_id} already has an attached WebSocket")
        session.attached = True
        session.touch()
        return session

    async def detach(self, session: Session) -> None:
        """The attached WebSocket left: the session stays (its owner closes it) unless a close is pending."""
        session.attached = False
        if session.close_pending:
            await self.close(session)

    async def close(self, session: Session) -> None:
        """Unregister a session and close its env exactly once; errors are logged, not raised."""
        if session.closed:
            return
        session.closed = True
        if self.sessions.get(session.id) is session:
            del self.sessions[session.id]
        try:
            if self.executor is not None:
                await asyncio.get_running_loop().run_in_executor(self.executor, session.env.close)
            else:
                result: Any = session.env.close()
                if inspect.isawaitable(result):
                    await result
        except Exception:
            log.warning("closing env of session %s raised", session.id, exc_info=True)

    def idle(self, idle_timeout_s: float) -> list[Session]:
        """Sessions with no request for ``idle_timeout_s`` and none in flight; a session a ``/ws?session_id=``
        WebSocket holds is exempt while it does (OpenEnv's reaper skips attached sessions too)."""
        cutoff = time.monotonic() - idle_timeout_s
        return [s for s in self.sessions.values()
                if s is not None and not s.busy and not s.attached and s.last_active < cutoff]
