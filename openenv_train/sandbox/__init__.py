"""OS isolation for code an agent writes and for env server processes (bubblewrap namespaces + rlimits).

- :class:`Sandbox`: ``run(argv | shell string)``, ``run_python(code)`` and their async twins; each run in
  fresh namespaces with no network, limits on CPU, wall time, memory, processes, files and output, and a
  scratch dir that persists between runs of one sandbox.
- :func:`sandboxed_command`: wrap an env server's command line so it runs sandboxed behind a Unix socket.
- :func:`sandbox_available`: None when sandboxes work here, else why not and how to fix it. Where they do
  not, :class:`SandboxUnavailable` is raised rather than running anything unsandboxed, unless
  ``SandboxConfig(allow_unsafe=True)`` says otherwise.
"""

from ._config import DEFAULT_SYSTEM_PATHS, SandboxConfig, SandboxLimits
from ._errors import SandboxError, SandboxStateError, SandboxUnavailable
from ._mounts import python_roots
from ._probe import sandbox_available
from ._result import KilledReason, SandboxResult
from ._sandbox import Sandbox, SandboxState
from ._server import sandboxed_command

__all__ = [
    "DEFAULT_SYSTEM_PATHS",
    "KilledReason",
    "Sandbox",
    "SandboxConfig",
    "SandboxError",
    "SandboxLimits",
    "SandboxResult",
    "SandboxState",
    "SandboxStateError",
    "SandboxUnavailable",
    "python_roots",
    "sandbox_available",
    "sandboxed_command",
]
