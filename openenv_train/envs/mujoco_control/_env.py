"""DMControlEnvironment: a MuJoCo task of dm_control's suite, OpenEnv dm_control_env's shapes."""

from __future__ import annotations

import base64
import math
import uuid
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from importlib import resources
from typing import Annotated, Any, TypeVar

from pydantic import Field

from ...core import did_you_mean
from ...server import Environment
from ..png import encode_png, png_data_url
from ._gl import RENDER_FIX, RenderingUnavailable, gl_backend
from ._models import DMControlAction, DMControlObservation, DMControlState

__all__ = ["DMControlEnvironment"]

T = TypeVar("T")
Side = Annotated[int, Field(ge=16, le=1024, description="Rendered frame height or width in pixels.")]


def _suite() -> Any:
    backend = gl_backend()  # MUJOCO_GL must be settled before dm_control's first import
    try:
        from dm_control import suite
    except Exception as exc:  # a backend set but not loadable fails dm_control's import (PyOpenGL's errors vary)
        if not backend:
            raise
        raise RenderingUnavailable(f"dm_control could not load the OpenGL backend MUJOCO_GL={backend} ({exc}); "
                                   f"unset MUJOCO_GL for state observations alone, or: {RENDER_FIX}") from exc
    return suite


def _spec(array_spec: Any) -> dict[str, Any]:
    return {"shape": list(array_spec.shape), "dtype": str(array_spec.dtype)}


class DMControlEnvironment(Environment[DMControlAction, DMControlObservation, DMControlState]):
    """A continuous-control task of dm_control's suite (MuJoCo physics): cartpole, reacher, walker, cheetah, ...

    ``reset`` picks the task (``domain_name``/``task_name``, default cartpole/balance), seeds its random start
    and optionally turns on pixel observations (``render``). Each step applies one value per actuator for one
    control timestep; an action of the wrong length, out of bounds or not finite is rejected with the reason in
    ``error`` and nothing is simulated. The reward is the task's own (in [0, 1] per step); ``done`` comes with
    the task's time limit (1000 steps for most).

    Args:
        domain_name: default domain.
        task_name: default task.
    """

    name = "dm_control"
    action_type = DMControlAction
    observation_type = DMControlObservation
    state_type = DMControlState
    readme = resources.files(__package__).joinpath("README.md").read_text(encoding="utf-8")
    blocking = True  # loading a task compiles its model, rendering takes milliseconds (on the env's own thread)

    def __init__(self, *, domain_name: str = "cartpole", task_name: str = "balance") -> None:
        self._task = (domain_name, task_name)
        self._env: Any = None
        self._loaded: tuple[str, str] | None = None
        self._render: tuple[int, int, int] | None = None
        self._over = False
        self._state = DMControlState(domain_name=domain_name, task_name=task_name)
        self._thread: ThreadPoolExecutor | None = None

    def _on_own_thread(self, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        """Run ``fn`` on this env's one thread: a GL context stays current on the thread that made it, and the
        server's worker threads take a session's calls in turn."""
        if self._thread is None:
            self._thread = ThreadPoolExecutor(1, thread_name_prefix="dm_control")
        return self._thread.submit(fn, *args, **kwargs).result()

    def reset(self, *, seed: int | None = None, episode_id: str | None = None,  # type: ignore[override]
              domain_name: str | None = None, task_name: str | None = None, render: bool = False,
              render_height: Side = 240, render_width: Side = 320, camera_id: int = 0) -> DMControlObservation:
        """Load a task (when it changed), seed it and start an episode.

        Raises:
            ValueError: an unknown domain or task (close matches suggested).
            RenderingUnavailable: ``render`` on a host where MuJoCo cannot render (the message names the fix).
        """
        return self._on_own_thread(self._reset, seed, episode_id, domain_name, task_name,
                                   (render_height, render_width, camera_id) if render else None)

    def _reset(self, seed: int | None, episode_id: str | None, domain_name: str | None, task_name: str | None,
               render: tuple[int, int, int] | None) -> DMControlObservation:
        suite = _suite()
        task = (domain_name or self._task[0], task_name or self._task[1])
        if task not in suite.ALL_TASKS:
            domains = sorted({d for d, _ in suite.ALL_TASKS})
            if task[0] not in domains:
                raise ValueError(f"no dm_control domain {task[0]!r}{did_you_mean(task[0], domains, otherwise='.')} "
                                 f"Known: {', '.join(domains)}")
            tasks = sorted(t for d, t in suite.ALL_TASKS if d == task[0])
            raise ValueError(f"domain {task[0]!r} has no task {task[1]!r}{did_you_mean(task[1], tasks, otherwise='.')}"
                             f" Its tasks: {', '.join(tasks)}")
        if task != self._loaded:
            self._free()
            self._env = suite.load(*task)
            self._loaded = task
        env = self._env
        # the task draws its random start from this generator: reseeding it makes the episode the seed's
        env.task.random.seed((seed if seed is not None else uuid.uuid4().int) % 2**32)
        self._render = render
        time_step = env.reset()
        self._over = False
        spec = env.action_spec()
        self._state = DMControlState(
            episode_id=episode_id or uuid.uuid4().hex, domain_name=task[0], task_name=task[1],
            action_spec={**_spec(spec), "minimum": spec.minimum.tolist(), "maximum": spec.maximum.tolist(),
                         "name": spec.name},
            observation_spec={name: _spec(s) for name, s in env.observation_spec().items()},
            physics_timestep=float(env.physics.timestep()), control_timestep=float(env.control_timestep()))
        return self._observation(time_step, reward=0.0)

    def step(self, action: DMControlAction) -> DMControlObservation:  # type: ignore[override]
        """Apply ``action.values`` for one control timestep."""
        return self._on_own_thread(self._step, action)

    def _step(self, action: DMControlAction) -> DMControlObservation:
        env = self._env
        if env is None:
            return DMControlObservation(error="no task is loaded; call reset() first")
        if self._over:
            return DMControlObservation(error="the episode is over; call reset() to start another", done=True,
                                        reward=0.0)
        values, problem = self._checked(action.values)
        if problem is not None:
            return DMControlObservation(error=problem, reward=0.0)
        time_step = env.step(values)
        self._state.step_count += 1
        reward = float(time_step.reward or 0.0)
        self._state.episode_return += reward
        self._over = time_step.last()
        return self._observation(time_step, reward=reward, done=self._over)

    def _checked(self, values: list[float]) -> tuple[Any, str | None]:
        """The action as dm_control's array, or why it is rejected."""
        import numpy as np

        spec = self._env.action_spec()
        low, high = spec.minimum, spec.maximum
        if not values:
            return np.clip(np.zeros(spec.shape, dtype=spec.dtype), low, high), None
        size = int(np.prod(spec.shape))
        bounds = f"each value in [{float(np.min(low)):g}, {float(np.max(high)):g}]"
        if len(values) != size:
            return None, (f"{self._state.domain_name}/{self._state.task_name} takes {size} action value(s), "
                          f"one per actuator ({bounds}); got {len(values)}")
        if not all(math.isfinite(v) for v in values):
            return None, "action values must be finite numbers (no NaN or infinity)"
        array = np.asarray(values, dtype=spec.dtype).reshape(spec.shape)
        outside = np.flatnonzero((array < low) | (array > high)).tolist()
        if outside:
            return None, (f"action value(s) at {outside} are out of bounds: {bounds} "
                          f"(minimum {spec.minimum.tolist()}, maximum {spec.maximum.tolist()})")
        return array, None

    def _observation(self, time_step: Any, **fields: Any) -> DMControlObservation:
        import numpy as np

        observations = {name: np.asarray(value, dtype=float).reshape(-1).tolist()
                        for name, value in time_step.observation.items()}
        return DMControlObservation(observations=observations, pixels=self._pixels(), **fields)

    def _pixels(self) -> str | None:
        if self._render is None:
            return None
        height, width, camera = self._render
        try:
            frame = self._env.physics.render(height=height, width=width, camera_id=camera)
        except ValueError:  # a camera the model does not have: dm_control's message names the range
            raise
        except Exception as exc:  # the backend failed to start: say how to get one
            raise RenderingUnavailable(f"MuJoCo could not render ({type(exc).__name__}: {exc}; MUJOCO_GL="
                                       f"{gl_backend() or 'unset'}): {RENDER_FIX}") from exc
        return base64.b64encode(encode_png(frame.tobytes(), width, height, 3)).decode("ascii")

    @staticmethod
    def render_observation(observation: dict[str, Any]) -> str | None:
        """The rendered frame, when the episode renders one."""
        src = png_data_url(observation.get("pixels"))
        return None if src is None else f'<img alt="MuJoCo scene" src="{src}">'

    @property
    def state(self) -> DMControlState:
        return self._state

    def close(self) -> None:
        """Free the task's physics and its rendering context, and the env's thread."""
        thread, self._thread = self._thread, None
        if thread is not None:
            thread.submit(self._free).result()
            thread.shutdown()

    def _free(self) -> None:
        env, self._env, self._loaded = self._env, None, None
        if env is not None:
            env.close()
