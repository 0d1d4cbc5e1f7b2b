"""The jupyter env: a sandboxed ipykernel over ZeroMQ IPC; results, errors, the cell time limit, a dead kernel."""

from __future__ import annotations

import pytest
from openenv.core import GenericEnvClient as OEGenericEnvClient
from pydantic import ValidationError

from tests.conftest import serve_inloop
from tests.sandbox.conftest import require_sandbox

pytest.importorskip("jupyter_client")
pytest.importorskip("ipykernel")

from openenv_train.envs.jupyter import JupyterAction, JupyterEnv, JupyterEnvironment  # noqa: E402

FIB = "def fib(n):\n    a, b = 0, 1\n    for _ in range(n):\n        a, b = b, a + b\n    return a\n"


def test_actions_and_limits_are_checked() -> None:
    with pytest.raises(ValidationError):
        JupyterAction(code=3)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="cell_timeout_s"):
        JupyterEnvironment(cell_timeout_s=600)


async def test_cells_keep_state_time_out_raise_and_survive_a_dead_kernel() -> None:
    require_sandbox()
    env = JupyterEnvironment(cell_timeout_s=2.0)
    try:
        first = await env.reset(task_id="fib_30", episode_id="e")
        assert "Fibonacci" in first.question and not first.done
        defined = await env.step(JupyterAction(code=FIB + "print('ok')\nfib(30)"))
        assert defined.stdout == "ok\n" and defined.result == "832040" and defined.execution_count == 1
        raised = await env.step(JupyterAction(code="1/0"))
        assert raised.error_name == "ZeroDivisionError" and "1/0" in raised.traceback and "\x1b" not in raised.traceback
        hung = await env.step(JupyterAction(code="while True: pass"))
        assert hung.timed_out and hung.error_name == "KeyboardInterrupt" and not hung.kernel_restarted
        kept = await env.step(JupyterAction(code="fib(10)"))
        assert kept.result == "55", "an interrupted cell leaves the kernel and its variables"
        dead = await env.step(JupyterAction(code="import os; os._exit(3)"))
        assert dead.kernel_restarted and dead.error is not None and "exited" in dead.error and not dead.done
        fresh = await env.step(JupyterAction(code="fib"))
        assert fresh.error_name == "NameError" and env.state.restarts == 1
        answered = await env.step(JupyterAction(answer="832040"))
        assert answered.done and answered.correct and answered.reward == 1.0
        late = await env.step(JupyterAction(code="1"))
        assert late.error is not None and "reset()" in late.error
    finally:
        await env.close()


async def test_openenv_generic_client_and_the_typed_client_over_the_wire() -> None:
    require_sandbox()
    async with serve_inloop(JupyterEnvironment) as server:
        async with OEGenericEnvClient(base_url=server.url) as oe:
            await oe.reset(task_id="fib_30")
            result = await oe.step({"code": "x = 6 * 7\nx"})
            assert result.observation["result"] == "42" and result.done is False
            result = await oe.step({"answer": "1"})
            assert result.done is True and result.reward == 0.0
        async with JupyterEnv(base_url=server.url) as env:
            await env.reset(task_id="fib_30")
            typed = await env.step(JupyterAction(code="print('hi')"))
            assert typed.observation.stdout == "hi\n" and typed.observation.execution_count == 1
