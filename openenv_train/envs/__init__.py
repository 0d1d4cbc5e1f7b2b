"""The built-in catalog: each environment by name, loaded lazily from its ``module:Class`` entry point."""

from ._catalog import CATALOG, EnvSpec, get_spec, list_envs, load_env_class, register

__all__ = ["CATALOG", "EnvSpec", "get_spec", "list_envs", "load_env_class", "register"]
