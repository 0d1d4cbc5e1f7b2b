"""The Atari env: ale-py games, action ids, RGB/grayscale/RAM observations as PNGs or lists, seeding, both clients."""

from __future__ import annotations

import base64
import io

import pytest
from openenv.core import GenericEnvClient as OEGenericEnvClient

from tests.conftest import serve_inloop

pytest.importorskip("ale_py")

from openenv_train.envs.atari import AtariAction, AtariEnv, AtariEnvironment, encode_png  # noqa: E402


def test_frames_are_pngs_of_the_screen_and_the_options_shape_the_observation() -> None:
    from PIL import Image

    env = AtariEnvironment()
    first = env.reset(seed=7)
    assert first.screen_shape == [210, 160, 3] and first.action_meanings[:2] == ["NOOP", "FIRE"]
    image = Image.open(io.BytesIO(base64.b64decode(first.screen_png)))
    listed = env.reset(seed=7, screen_format="list")
    assert image.size == (160, 210) and image.tobytes() == bytes(listed.screen)
    assert len(first.screen_png) < 8000, "a frame travels as a few KiB, not 100 KB"
    grey = env.reset(seed=7, obs_type="grayscale", screen_format="list")
    assert grey.screen_shape == [210, 160] and len(grey.screen) == 210 * 160 and not grey.screen_png
    ram = env.reset(seed=7, obs_type="ram", frameskip=1, full_action_space=True)
    assert ram.screen_shape == [128] and len(ram.screen) == 128 and len(ram.legal_actions) == 18
    bad = env.step(AtariAction(action_id=99))
    assert bad.error is not None and "0..17" in bad.error and env.state.step_count == 0
    assert env.step(AtariAction(action_id=1)).error is None and env.state.step_count == 1
    with pytest.raises(ValueError, match="did you mean 'breakout'"):
        env.reset(game_name="breakot")
    with pytest.raises(ValueError, match="greyscale or RGB"):
        encode_png(b"\x00" * 5, 2, 2, 3)


def test_same_seed_same_frames_and_sticky_actions_follow_the_seed() -> None:
    def play(seed: int, sticky: float) -> list[str]:
        env = AtariEnvironment(game_name="breakout")
        env.reset(seed=seed, repeat_action_probability=sticky)
        return [env.step(AtariAction(action_id=i % 4)).screen_png for i in range(30)]

    assert play(3, 0.25) == play(3, 0.25)
    assert play(3, 0.25) != play(3, 0.0)


async def test_openenv_generic_client_and_the_typed_client_over_the_wire() -> None:
    async with serve_inloop(AtariEnvironment) as server:
        async with OEGenericEnvClient(base_url=server.url) as oe:
            first = await oe.reset(seed=1, game_name="space_invaders", obs_type="ram")
            assert first.observation["screen_shape"] == [128]
            result = await oe.step({"action_id": 1})
            assert result.done is False and len(result.observation["screen"]) == 128
        async with AtariEnv(base_url=server.url) as env:
            await env.reset(seed=1)
            typed = await env.step(AtariAction(action_id=2))
            assert typed.observation.screen_png and typed.observation.frame_number == 4
