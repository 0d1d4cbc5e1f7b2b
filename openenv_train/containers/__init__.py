"""Docker images of env servers: build contexts (Dockerfile + sources + dependencies) and ``docker build``."""

from ._cli import docker_available
from ._context import DEFAULT_BASE_IMAGE, BuildContext, write_context
from ._deps import requirements
from ._image import LABEL_ENV, LABEL_TRANSPORT, build_image, default_tag

__all__ = [
    "DEFAULT_BASE_IMAGE",
    "LABEL_ENV",
    "LABEL_TRANSPORT",
    "BuildContext",
    "build_image",
    "default_tag",
    "docker_available",
    "requirements",
    "write_context",
]
