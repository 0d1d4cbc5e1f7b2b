"""The Environment base class: ``reset``/``step``/``state``/``close``, sync or async."""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Sequence
from functools import cached_property
from types import UnionType
from typing import Annotated, Any, ClassVar, Generic, TypeVar, Union, get_args, get_origin

from pydantic import BaseModel, ConfigDict, TypeAdapter, create_model

from ..core import Action, EnvMetadata, Observation, OpenEnvTrainError, State
from ._tasks import TaskSplit, find_split

__all__ = ["LIST_TASKS_LIMIT", "EnvSpecInfo", "Environment", "RubricFailed"]

#: Most task specs ``list_tasks`` returns (a seeded game's split holds a million seeds): OpenEnv lets a large
#: split answer a bounded preview; ``get_task_range`` pages through the rest.
LIST_TASKS_LIMIT = 1000

ActT = TypeVar("ActT", bound=Action)
ObsT = TypeVar("ObsT", bound=Observation)
StateT = TypeVar("StateT", bound=State)


class Environment(Generic[ActT, ObsT, StateT]):
    """One episode-holding environment instance; the server builds one per session.

    Subclasses set ``action_type``/``observation_type``/``state_type`` and implement
    ``reset``, ``step`` and ``state``. Any of ``reset``, ``step``, ``close`` may be
    ``async def``. Sync methods run on the server's event loop, so they must be quick;
    an env whose sync methods block (subprocesses, sleeps, heavy compute) sets
    ``blocking = True`` and the server runs them in worker threads instead.

    Example:
        >>> from openenv_train.envs.counter import CounterEnvironment, CounterAction
        >>> env = CounterEnvironment()
        >>> env.reset(seed=0).value
        0
        >>> env.step(CounterAction(delta=3)).value
        3
        >>> env.state.step_count
        1
    """

    action_type: ClassVar[Any] = Action
    observation_type: ClassVar[Any] = Observation
    state_type: ClassVar[type[State]] = State
    #: Catalog name reported by ``/metadata``; defaults to the class name.
    name: ClassVar[str | None] = None
    version: ClassVar[str] = "0.1.0"
    author: ClassVar[str | None] = None
    documentation_url: ClassVar[str | None] = None
    readme: ClassVar[str | None] = None
    #: Run sync methods in worker threads because they block.
    blocking: ClassVar[bool] = False
    #: Names of ``state`` fields a player must not see (Wordle's ``secret``, an opponent's cards): the
    #: ``serve --web`` playground leaves them out of its State panel unless "show hidden" is ticked.
    hidden_state_fields: ClassVar[frozenset[str]] = frozenset()
    #: The env runs code in OS sandboxes of its own (coding, repl, git, terminal, jupyter): ``serve --sandbox``
    #: then lets its server's sandbox open nested ones (``SandboxConfig.nested``).
    opens_sandboxes: ClassVar[bool] = False
    #: A step rubric (OpenEnv's ``Environment.rubric``): any callable ``(action, observation) -> float`` with an
    #: optional ``reset()``, e.g. :class:`openenv_train.rubrics.StepRubric` or OpenEnv's own ``Rubric``. Set it
    #: in ``__init__``; ``step`` scores with :meth:`_apply_rubric` and ``reset`` clears it with :meth:`_reset_rubric`.
    rubric: Any = None

    def reset(self, *, seed: int | None = None, episode_id: str | None = None,
              **options: Any) -> ObsT | Awaitable[ObsT]:
        """Start a new episode and return its first observation."""
        raise NotImplementedError(f"{type(self).__name__} must implement reset()")

    def step(self, action: ActT) -> ObsT | Awaitable[ObsT]:
        """Apply one action and return the next observation."""
        raise NotImplementedError(f"{type(self).__name__} must implement step()")

    @property
    def state(self) -> StateT:
        """The current episode state (``episode_id``, ``step_count``, env extras)."""
        raise NotImplementedError(f"{type(self).__name__} must implement the state property")

    def close(self) -> None | Awaitable[None]:
        """Release what the instance holds; called once when its session ends."""

    # -- OpenEnv 0.10's Task API: answered from task_splits(); 501 on the server where an env declares none --------
    def task_splits(self) -> Sequence[TaskSplit]:
        """The env's task splits (override it; ``server.seed_splits`` and ``server.listed_split`` build them).

        Must be cheap and free of side effects: the server calls it on a fresh instance per Task API request.

        Raises:
            NotImplementedError: the env has no tasks (the default): the Task API routes answer 501.
        """
        raise NotImplementedError(f"{type(self).__name__} declares no task splits")

    def list_splits(self) -> list[dict[str, Any]]:
        """Split descriptors: ``{"name", "type", "num_tasks"}`` each."""
        return [split.descriptor() for split in self.task_splits()]

    def list_tasks(self, split: str) -> list[dict[str, Any]]:
        """The split's task specs (at most :data:`LIST_TASKS_LIMIT`; ``get_task_range`` pages further)."""
        return self.get_task_range(split, 0, LIST_TASKS_LIMIT)

    def num_tasks(self, split: str) -> int:
        """How many tasks the split holds."""
        return len(find_split(self.task_splits(), split))

    def get_task(self, split: str, index: int) -> dict[str, Any]:
        """One task spec (IndexError outside the split)."""
        return find_split(self.task_splits(), split).spec(index)

    def get_task_range(self, split: str, start: int | None = None, stop: int | None = None) -> list[dict[str, Any]]:
        """Task specs ``[start, stop)``, Python slice bounds."""
        chosen = find_split(self.task_splits(), split)
        return [chosen.spec(i) for i in range(len(chosen))[start:stop]]

    def task_reset_options(self, split: str, index: int) -> dict[str, Any]:
        """``reset``'s options for task ``index`` of ``split``: the server applies them for ``reset(split=...,
        index=...)`` unless ``reset`` names ``split`` itself (then it gets both, as OpenEnv passes them)."""
        return find_split(self.task_splits(), split).reset_options(index)

    # -- an attached rubric, as OpenEnv's Environment applies it ---------------------------------------
    def _apply_rubric(self, action: Any, observation: Any) -> float:
        """The attached rubric's score of this step (0.0 without one), as OpenEnv's ``_apply_rubric``.

        Raises:
            RubricFailed: the rubric raised (the session stays; the step answers an execution error).
        """
        if self.rubric is None:
            return 0.0
        if inspect.iscoroutinefunction(getattr(self.rubric, "forward", None)):
            raise RubricFailed(self.rubric, TypeError("the rubric is async; score with 'await _apply_rubric_async'"))
        try:
            score = self.rubric(action, observation)
        except Exception as exc:
            raise RubricFailed(self.rubric, exc) from exc
        if inspect.isawaitable(score):
            if inspect.iscoroutine(score):
                score.close()  # never awaited: close it rather than leak a warning
            raise RubricFailed(self.rubric, TypeError("the rubric is async; score with 'await _apply_rubric_async'"))
        return float(score)

    async def _apply_rubric_async(self, action: Any, observation: Any) -> float:
        """:meth:`_apply_rubric` for async rubrics (an awaitable score is awaited)."""
        if self.rubric is None:
            return 0.0
        try:
            score = self.rubric(action, observation)
            if inspect.isawaitable(score):
                score = await score
        except Exception as exc:
            raise RubricFailed(self.rubric, exc) from exc
        return float(score)

    def _reset_rubric(self) -> None:
        """Clear the attached rubric's episode state (its ``reset()``), as OpenEnv's ``_reset_rubric``."""
        reset = getattr(self.rubric, "reset", None)
        if callable(reset):
            reset()

    async def _reset_rubric_async(self) -> None:
        """:meth:`_reset_rubric`, awaiting the rubric's ``reset_async()`` where it has one."""
        reset = getattr(self.rubric, "reset_async", None) or getattr(self.rubric, "reset", None)
        if callable(reset):
            result = reset()
            if inspect.isawaitable(result):
                await result

    @classmethod
    def render_observation(cls, observation: dict[str, Any]) -> str | None:
        """A human view of an observation (a Wordle board, a game board, a screenshot) as a safe HTML fragment.

        The playground shows it above the observation's JSON, and the trace viewer above each recorded step's.
        Override it as a classmethod or staticmethod: it gets the observation as a JSON dict (live or read back
        from a trace), so it must not use the instance. Escape every text from the observation
        (``html.escape``) and use inline styles (the fragment goes into other pages). Default: None (no view).
        """
        return None

    @classmethod
    def metadata_info(cls) -> EnvMetadata:
        """What ``GET /metadata`` serves for this class."""
        doc = inspect.getdoc(cls) or ""
        return EnvMetadata(
            name=cls.name or cls.__name__,
            description=doc.split("\n\n", 1)[0].replace("\n", " "),
            readme_content=cls.readme,
            version=cls.version,
            author=cls.author,
            documentation_url=cls.documentation_url,
        )

    @classmethod
    def spec_info(cls) -> EnvSpecInfo:
        """Validation and schema helpers derived once per class."""
        info = cls.__dict__.get("_spec_info")
        if info is None:
            info = EnvSpecInfo(cls)
            cls._spec_info = info  # type: ignore[attr-defined]
        return info


class RubricFailed(OpenEnvTrainError):
    """An env's attached rubric raised while scoring a step."""

    def __init__(self, rubric: Any, cause: BaseException) -> None:
        name = type(rubric).__name__
        super().__init__(f"the env's rubric {name} raised {type(cause).__name__}: {cause}; fix the rubric (the "
                         "session stays open, this step was not scored)")
        self.rubric = rubric


def _options_model(env_cls: type[Any], names: frozenset[str], accepts_any: bool) -> type[BaseModel]:
    """A model of ``reset``'s keyword options, built from its signature and type hints."""
    try:
        hints = inspect.get_annotations(env_cls.reset, eval_str=True)
    except Exception:  # unresolvable hints: accept any type rather than refuse the env
        hints = {}
    params = inspect.signature(env_cls.reset).parameters
    fields: dict[str, Any] = {
        name: (hints.get(name, Any), ... if params[name].default is params[name].empty else params[name].default)
        for name in names
    }
    config = ConfigDict(extra="allow" if accepts_any else "forbid", arbitrary_types_allowed=True)
    return create_model(f"{env_cls.__name__}ResetOptions", __config__=config, **fields)  # type: ignore[call-overload, no-any-return]


class EnvSpecInfo:
    """Per-class facts the server needs on every request, computed once."""

    def __init__(self, env_cls: type[Environment[Any, Any, Any]]) -> None:
        self.env_cls = env_cls
        self.action_adapter: TypeAdapter[Any] = TypeAdapter(env_cls.action_type)
        params = inspect.signature(env_cls.reset).parameters
        self.reset_accepts_any = any(p.kind is p.VAR_KEYWORD for p in params.values())
        self.reset_params = frozenset(
            name for name, p in params.items() if name != "self" and p.kind in (p.KEYWORD_ONLY, p.POSITIONAL_OR_KEYWORD)
        )
        self.reset_model = _options_model(env_cls, self.reset_params, self.reset_accepts_any)
        step_params = inspect.signature(env_cls.step).parameters
        self.step_params = frozenset(name for name in list(step_params)[2:]
                                     if step_params[name].kind is not step_params[name].VAR_KEYWORD)

    @cached_property
    def action_name(self) -> str:
        action_type = self.env_cls.action_type
        while get_origin(action_type) is Annotated:
            action_type = get_args(action_type)[0]
        if get_origin(action_type) in (Union, UnionType):
            return " | ".join(getattr(a, "__name__", str(a)) for a in get_args(action_type))
        return getattr(action_type, "__name__", None) or str(action_type)

    @cached_property
    def action_fields(self) -> list[str]:
        schema = self.action_adapter.json_schema()
        names: list[str] = list(schema.get("properties", {}))
        for variant in schema.get("oneOf", schema.get("anyOf", [])):
            ref = variant.get("$ref", "").rsplit("/", 1)[-1]
            names += [n for n in schema.get("$defs", {}).get(ref, {}).get("properties", {}) if n not in names]
        return names

    def schema(self) -> dict[str, Any]:
        """The ``/schema`` document: JSON schemas of action, observation, state and (as openenv 0.10) reset's observation."""
        env_cls = self.env_cls
        observation = TypeAdapter(env_cls.observation_type).json_schema()
        reset_type = getattr(env_cls, "reset_observation_type", None)
        return {
            "action": self.action_adapter.json_schema(),
            "observation": observation,
            "state": TypeAdapter(env_cls.state_type).json_schema(),
            "reset_observation": observation if reset_type is None else TypeAdapter(reset_type).json_schema(),
        }
