"""``collect``'s pool options are PoolConfig's fields: their help is PoolConfig's, their flags and defaults collect's."""

from __future__ import annotations

import dataclasses

from openenv_train.cli._collect import POOL_OPTIONS
from openenv_train.pool import PoolConfig

from .conftest import cli


def test_pool_options_come_from_poolconfig_with_the_commands_flags() -> None:
    done = cli("collect", "--help", env={"COLUMNS": "400", "TERM": "dumb", "NO_COLOR": "1"})
    assert done.returncode == 0, done.stderr
    text = " ".join(done.stdout.split())
    for flag in ("--num-actors", "--sessions-per-actor", "--max-turns", "--episode-timeout", "--ray-address",
                 "--progress", "--server-capacity", "--max-tokens", "--temperature"):
        assert flag in text, flag
    helps = {f.name: f.metadata["help"] for f in dataclasses.fields(PoolConfig)}
    for name in POOL_OPTIONS:
        assert " ".join(helps[name].split())[:40] in text, name
    assert set(POOL_OPTIONS) <= set(helps)
