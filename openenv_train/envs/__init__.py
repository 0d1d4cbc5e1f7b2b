"""The built-in catalog: each environment by name, loaded lazily from its ``module:Class`` entry point.

Env folders in OpenEnv's layout (``openenv.yaml``) load too, whether their app is our Environment class or an
OpenEnv ``create_app`` app (``load_env_folder``, ``wrap_openenv_app``); a folder whose app is a plain ASGI app
with routes of its own is served as it is (``load_env_target`` gives an ``AsgiApp``, which the catalog lookup lent to
the providers gives too).
"""

from ..core import CatalogLookup, register_catalog
from ._catalog import (
    CATALOG,
    EnvSpec,
    get_spec,
    is_env_folder,
    list_envs,
    load_env_class,
    load_env_target,
    register,
)
from ._openenv import (
    OpenEnvObservation,
    find_openenv_server,
    load_env_folder,
    load_env_folder_target,
    wrap_openenv_app,
    wrap_openenv_env,
)

__all__ = [
    "CATALOG",
    "EnvSpec",
    "OpenEnvObservation",
    "find_openenv_server",
    "get_spec",
    "is_env_folder",
    "list_envs",
    "load_env_class",
    "load_env_folder",
    "load_env_folder_target",
    "load_env_target",
    "register",
    "wrap_openenv_app",
    "wrap_openenv_env",
]

# the in-process provider and the image builder sit below the catalog: lend them its lookup
register_catalog(CatalogLookup(load_env_target, lambda name: get_spec(name).dependencies))
