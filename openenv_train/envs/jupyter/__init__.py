"""The jupyter env: a real Jupyter kernel per session in the OS sandbox (ZeroMQ IPC channels); needs ``[jupyter]``."""

from ._env import JupyterEnvironment, kernel_limits
from ._kernel import CellRun, KernelDied, SandboxedKernel
from ._models import JupyterAction, JupyterObservation, JupyterState
from .client import JupyterEnv

__all__ = [
    "CellRun",
    "JupyterAction",
    "JupyterEnv",
    "JupyterEnvironment",
    "JupyterObservation",
    "JupyterState",
    "KernelDied",
    "SandboxedKernel",
    "kernel_limits",
]
