"""Which OpenGL backend MuJoCo renders with (``MUJOCO_GL``), chosen once per process before dm_control loads.

dm_control reads ``MUJOCO_GL`` when it is first imported. Left unset on a headless host it picks GLFW, which
imports but cannot open a window, so pixels fail late; set to a backend that cannot start, the import itself
fails, state observations included. So where the variable is unset and there is no display, a short child
process tries EGL, then OSMesa, and the first that imports is set; where neither does, the variable stays unset
(state observations work, pixels get :class:`RenderingUnavailable`).
"""

from __future__ import annotations

import ctypes.util
import functools
import os
import subprocess
import sys

from ...core import OpenEnvTrainError

__all__ = ["RENDER_FIX", "RenderingUnavailable", "gl_backend"]

RENDER_FIX = ("pixel observations need an OpenGL backend for MuJoCo: on a headless Linux host install Mesa's EGL "
              "(apt-get install -y libegl1 libegl-mesa0 libgl1-mesa-dri) and set MUJOCO_GL=egl, or OSMesa "
              "(apt-get install -y libosmesa6) and set MUJOCO_GL=osmesa; state observations need neither")
_PROBE_TIMEOUT_S = 60.0
_LIBRARIES = {"egl": "EGL", "osmesa": "OSMesa"}


class RenderingUnavailable(OpenEnvTrainError, RuntimeError):
    """MuJoCo cannot render on this host (no working OpenGL backend); the message names the fix."""


def _imports(backend: str) -> bool:
    """Whether dm_control's renderer imports with ``MUJOCO_GL=backend`` (tried in a child: a failed import
    would leave this process's dm_control half loaded)."""
    if ctypes.util.find_library(_LIBRARIES[backend]) is None:
        return False
    env = {**os.environ, "MUJOCO_GL": backend}
    env.pop("PYOPENGL_PLATFORM", None)
    try:
        done = subprocess.run([sys.executable, "-c", "import dm_control._render"], env=env, capture_output=True,
                              timeout=_PROBE_TIMEOUT_S, check=False)
    except subprocess.TimeoutExpired:
        return False
    return done.returncode == 0


@functools.cache
def gl_backend() -> str:
    """``MUJOCO_GL`` for this process: the user's setting; else ``glfw`` (dm_control's own choice) where there is
    a display; else ``egl`` or ``osmesa``, whichever imports first (and sets the variable); else ``""`` (none
    works: state observations only). Call it before dm_control is imported."""
    chosen = os.environ.get("MUJOCO_GL")
    if chosen is not None:
        return chosen
    if os.environ.get("DISPLAY") or sys.platform == "darwin":
        return "glfw"  # dm_control's own first choice, which a display serves
    for backend in _LIBRARIES:
        if _imports(backend):
            os.environ["MUJOCO_GL"] = backend
            return backend
    return ""
