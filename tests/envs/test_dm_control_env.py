"""The dm_control env: MuJoCo tasks of dm_control's suite, checked actions, seeding, pixels, both clients."""

from __future__ import annotations

import base64
import ctypes.util
import io
import math
import os
import subprocess
import sys

import pytest
from openenv.core import GenericEnvClient as OEGenericEnvClient

from tests.conftest import serve_inloop

pytest.importorskip("dm_control", reason="needs the mujoco extra: pip install 'openenv-train[mujoco]'")

from openenv_train.envs.mujoco_control import (  # noqa: E402
    DMControlAction,
    DMControlEnv,
    DMControlEnvironment,
    RenderingUnavailable,
    gl_backend,
)


def test_bad_actions_are_rejected_and_the_episode_goes_on() -> None:
    env = DMControlEnvironment()
    first = env.reset(seed=1, episode_id="e")
    assert set(first.observations) == {"position", "velocity"} and len(first.observations["position"]) == 3
    spec = env.state.action_spec
    assert spec["shape"] == [1] and spec["minimum"] == [-1.0] and spec["maximum"] == [1.0]
    for values, why in (([0.1, 0.2], "takes 1 action value"), ([1.5], "out of bounds"), ([math.nan], "finite")):
        bad = env.step(DMControlAction(values=values))
        assert bad.error is not None and why in bad.error and bad.reward == 0.0
    assert env.state.step_count == 0
    pushed = env.step(DMControlAction(values=[1.0]))
    assert pushed.error is None and 0.0 <= (pushed.reward or 0.0) <= 1.0 and env.state.step_count == 1
    assert pushed.observations["position"] != first.observations["position"]
    assert env.step(DMControlAction()).error is None, "an empty list is the zero action"
    env.close()


def test_seeds_tasks_and_the_time_limit() -> None:
    env = DMControlEnvironment(domain_name="cartpole", task_name="swingup")
    one, again = env.reset(seed=4).observations, env.reset(seed=4).observations
    assert one == again and env.reset(seed=5).observations != one
    assert DMControlEnvironment(domain_name="cartpole", task_name="swingup").reset(seed=4).observations == one
    reacher = env.reset(seed=0, domain_name="reacher", task_name="easy")
    assert env.state.action_spec["shape"] == [2] and "to_target" in reacher.observations
    with pytest.raises(ValueError, match="did you mean 'cartpole'"):
        env.reset(domain_name="cartpol")
    with pytest.raises(ValueError, match="Its tasks: .*swingup"):
        env.reset(domain_name="cartpole", task_name="swing")
    env.reset(seed=0, domain_name="cartpole", task_name="balance")
    steps, last = 0, None
    while last is None or not last.done:
        last = env.step(DMControlAction(values=[0.0]))
        steps += 1
    assert steps == 1000 and env.state.step_count == 1000
    after = env.step(DMControlAction(values=[0.0]))
    assert after.error is not None and "reset()" in after.error and env.state.step_count == 1000
    env.close()


def test_pixels_render_headless_or_fail_naming_the_fix() -> None:
    env = DMControlEnvironment()
    if not gl_backend():
        with pytest.raises(RenderingUnavailable, match="MUJOCO_GL=egl"):
            env.reset(seed=0, render=True)
        return
    from PIL import Image

    first = env.reset(seed=0, render=True, render_height=48, render_width=64)
    assert first.pixels is not None
    image = Image.open(io.BytesIO(base64.b64decode(first.pixels)))
    assert image.size == (64, 48) and len(set(image.tobytes())) > 1, "a frame of the scene, not a blank"
    assert env.step(DMControlAction(values=[0.5])).pixels
    assert '<img alt="MuJoCo scene"' in (DMControlEnvironment.render_observation(first.model_dump()) or "")
    assert env.reset(seed=0).pixels is None
    env.close()


def test_a_backend_that_cannot_load_is_named_with_the_fix() -> None:
    if ctypes.util.find_library("OSMesa") is not None:
        pytest.skip("OSMesa is installed here, so MUJOCO_GL=osmesa loads")
    code = ("from openenv_train.envs.mujoco_control import DMControlEnvironment\n"
            "try:\n    DMControlEnvironment().reset(seed=0)\nexcept Exception as e:\n    print(type(e).__name__, e)")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300,
                          env={**os.environ, "MUJOCO_GL": "osmesa"})
    assert done.stdout.startswith("RenderingUnavailable") and "MUJOCO_GL=osmesa" in done.stdout
    assert "unset MUJOCO_GL for state observations" in done.stdout and "apt-get install" in done.stdout


async def test_openenv_generic_client_and_the_typed_client_over_the_wire() -> None:
    async with serve_inloop(DMControlEnvironment) as server:
        async with OEGenericEnvClient(base_url=server.url) as oe:
            first = await oe.reset(seed=1, domain_name="reacher", task_name="easy")
            assert set(first.observation["observations"]) == {"position", "to_target", "velocity"}
            bad = await oe.step({"values": [3.0, 0.0]})
            assert "out of bounds" in bad.observation["error"]
            result = await oe.step({"values": [0.5, -0.5]})
            assert result.done is False and result.observation["error"] is None
            assert (await oe.state())["step_count"] == 1
        async with DMControlEnv(base_url=server.url) as env:
            await env.reset(seed=1, render=gl_backend() != "", render_height=24, render_width=32)
            for _ in range(4):  # the server's worker threads take the calls in turn; the GL context stays on one
                typed = await env.step(DMControlAction(values=[0.2]))
                assert typed.observation.error is None and (typed.observation.pixels is not None) == (gl_backend() != "")
            assert (await env.state()).domain_name == "cartpole"
