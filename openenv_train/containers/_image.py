"""``docker build`` of a written context."""

from __future__ import annotations

from ._cli import docker_command
from ._context import BuildContext

__all__ = ["LABEL_ENV", "LABEL_TRANSPORT", "build_image", "default_tag"]

LABEL_ENV = "org.openenv-train.env"
LABEL_TRANSPORT = "org.openenv-train.transport"


def default_tag(env: str) -> str:
    """``openenv-train/<env>:latest`` (``module:Class`` becomes its module's last part).

    Example:
        >>> default_tag("echo"), default_tag("my_pkg.envs:MyEnv")
        ('openenv-train/echo:latest', 'openenv-train/envs:latest')
    """
    name = env.partition(":")[0].rsplit(".", 1)[-1] if ":" in env else env
    return f"openenv-train/{name.lower().replace('_', '-')}:latest"


def build_image(context: BuildContext, tag: str, *, docker: str = "docker", quiet: bool = True,
                timeout_s: float = 1800.0) -> str:
    """Run ``docker build`` (offline unless the deps come from PyPI); returns the tag.

    Raises:
        RuntimeError: the build failed (message ends with the build's output).
    """
    cmd = ["build", "-t", tag]
    if context.deps != "index":
        cmd += ["--network", "none"]
    if quiet:
        cmd.append("-q")
    done = docker_command([*cmd, str(context.path)], docker=docker, timeout_s=timeout_s)
    if done.returncode != 0:
        raise RuntimeError(f"docker build of {tag} failed:\n{(done.stdout + done.stderr).strip()[-3000:]}")
    return tag
