"""register_skyrl_env: put an env of ours in SkyRL's gym registry (``skyrl_gym.make(name, extras=...)``)."""

from __future__ import annotations

from typing import Any

__all__ = ["ENTRY_POINT", "register_skyrl_env"]

ENTRY_POINT = "openenv_train.integrations.skyrl._text_env:OpenEnvTextEnv"


def register_skyrl_env(name: str, *, env: str, replace: bool = False, **options: Any) -> str:
    """Register ``env`` under ``name`` in ``skyrl_gym``'s registry; returns ``name``.

    SkyRL's trainer then builds it from its config (``environment.env_class: <name>``) with each dataset
    row's extras, or you call ``skyrl_gym.make(name, extras={"reset": {...}})``.

    Args:
        name: the SkyRL env id.
        env: catalog name, ``module:Class`` or server URL.
        replace: replace an existing registration of ``name`` (else registering it twice raises).
        options: keyword arguments of :class:`OpenEnvTextEnv` (``mode``, ``max_turns``, ``max_sessions``, ...).

    Raises:
        ImportError: ``skyrl-gym`` is not installed (with the install line).
        skyrl_gym.error.RegistrationError: ``name`` is taken and ``replace`` is False.
    """
    try:
        import skyrl_gym
        from skyrl_gym.envs.registration import deregister
    except ImportError as exc:
        raise ImportError("register_skyrl_env needs SkyRL's gym: pip install 'skyrl-gym>=0.4,<0.5'") from exc
    if replace and name in skyrl_gym.registry:
        deregister(name)
    skyrl_gym.register(id=name, entry_point=ENTRY_POINT, kwargs={"env": env, **options})
    return name
