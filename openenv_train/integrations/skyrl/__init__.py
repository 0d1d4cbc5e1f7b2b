"""SkyRL adapters: trace rows as generator output, and any env of ours as a SkyRL ``BaseTextEnv``.

- :func:`to_skyrl_generator_output`: trace rows -> SkyRL's ``GeneratorOutput`` fields (pure data).
- :func:`register_skyrl_env`: register an env (catalog name, ``module:Class`` or URL) in ``skyrl_gym``.
- :class:`OpenEnvTextEnv`: the ``BaseTextEnv`` adapter itself (importing it imports ``skyrl_gym``).
- :class:`ActionFormat`, :func:`discover_format`: how model text becomes an action (text, JSON, MCP tool call).
- :func:`shutdown_servers`: stop the env servers the adapter started in this process.

``skyrl_gym`` is imported only by :class:`OpenEnvTextEnv` and :func:`register_skyrl_env`
(``pip install 'skyrl-gym>=0.4,<0.5'``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ...core import lazy_attributes
from ._actions import ActionFormat, ActionParseError, discover_format
from ._convert import to_skyrl_generator_output
from ._register import register_skyrl_env
from ._servers import shutdown_servers

if TYPE_CHECKING:
    from ._text_env import OpenEnvTextEnv

__all__ = ["ActionFormat", "ActionParseError", "OpenEnvTextEnv", "discover_format", "register_skyrl_env",
           "shutdown_servers", "to_skyrl_generator_output"]


__getattr__, __dir__ = lazy_attributes(__name__, lazy={"OpenEnvTextEnv": "._text_env"})
