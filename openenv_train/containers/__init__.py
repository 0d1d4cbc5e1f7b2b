"""Docker images of env servers (build contexts: Dockerfile + sources + dependencies; ``docker build``) and the one
wrapper of the Docker command line (every ``docker`` call of the project goes through ``docker_command``)."""

from ._cli import DockerResult, docker_available, docker_command, docker_command_async
from ._context import DEFAULT_BASE_IMAGE, BuildContext, write_context
from ._deps import requirements
from ._image import LABEL_ENV, LABEL_TRANSPORT, build_image, default_tag

__all__ = [
    "DEFAULT_BASE_IMAGE",
    "LABEL_ENV",
    "LABEL_TRANSPORT",
    "BuildContext",
    "DockerResult",
    "build_image",
    "default_tag",
    "docker_available",
    "docker_command",
    "docker_command_async",
    "requirements",
    "write_context",
]
