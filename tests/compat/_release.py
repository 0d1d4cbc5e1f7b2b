"""Which OpenEnv release these compatibility tests run against (the venv's: openenv-core 0.3.0 or openenv 0.10.0)."""

from __future__ import annotations

from importlib import metadata

from packaging.version import Version


def _release() -> tuple[str, Version]:
    for dist in ("openenv", "openenv-core"):  # the distribution was renamed from openenv-core to openenv
        try:
            return dist, Version(metadata.version(dist))
        except metadata.PackageNotFoundError:
            continue
    raise RuntimeError("neither openenv nor openenv-core is installed")


DISTRIBUTION, VERSION = _release()
#: openenv >= 0.10: /schema has reset_observation, observations repeat metadata, validate --url needs --json.
CURRENT = VERSION >= Version("0.10")
