"""OpenEnv 0.10's Task API both ways: OUR client reads an OpenEnv server whose env provides tasks, and OUR server's
answers are checked against OpenEnv's own request models and answer shapes (OpenEnv's generic client has no Task
API methods, so those are the two directions there are).

Under openenv-core 0.3.0 (no Task API) our client must say the server has none.
"""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from openenv_train.client import GenericEnvClient, TaskApiError, TaskClient, TasksNotSupported
from openenv_train.launch import Endpoint
from tests.compat._release import CURRENT
from tests.conftest import serve_process

needs_task_api = pytest.mark.skipif(not CURRENT, reason="OpenEnv's Task API came with openenv 0.10")


@needs_task_api
async def test_our_client_reads_an_openenv_task_api(oe_counter_url: str) -> None:
    tasks = TaskClient(Endpoint(oe_counter_url))
    assert await tasks.list_environments() == ["oe_counter"]
    # OpenEnv normalises a plain split name to {"name", "type"} and keeps a dict as it is
    assert await tasks.list_splits() == [{"name": "train", "type": "train"},
                                         {"name": "test", "type": "test", "num_tasks": 2}]
    assert await tasks.num_tasks("train") == 3
    assert await tasks.get_task("test", 1) == {"id": "test-1", "index": 1, "target": 8}
    assert [t["target"] for t in await tasks.get_task_range("train", 1, None)] == [2, 3]
    assert [t["target"] for t in await tasks.list_tasks("test")] == [7, 8]
    with pytest.raises(TaskApiError) as refused:
        await tasks.get_task("test", 5)
    assert refused.value.status == 400
    async with GenericEnvClient(oe_counter_url) as env:  # the same through EnvClient, and reset picks the task
        assert await env.num_tasks("test") == 2
        assert (await env.reset(split="test", index=0)).observation["target"] == 7


@pytest.mark.skipif(CURRENT, reason="openenv 0.10 serves the Task API")
async def test_our_client_says_an_old_openenv_server_has_no_task_api(oe_counter_url: str) -> None:
    with pytest.raises(TasksNotSupported, match="no Task API"):
        await TaskClient(Endpoint(oe_counter_url)).list_splits()


@needs_task_api
async def test_our_server_answers_openenv_task_requests_in_openenv_shapes(oe_counter_url: str) -> None:
    from openenv.core.env_server.types import GetTaskRangeRequest, GetTaskRequest, ListTasksRequest, NumTasksRequest

    requests: list[tuple[str, Any]] = [("tasks", ListTasksRequest(split="test")),
                                       ("num_tasks", NumTasksRequest(split="test")),
                                       ("task", GetTaskRequest(split="test", index=1)),
                                       ("task_range", GetTaskRangeRequest(split="test", start=0, stop=2))]
    async with serve_process("catch") as (ours, _), httpx.AsyncClient(timeout=30) as http:
        theirs = {}
        for route, request in requests:  # OpenEnv's own answers on its server: the shapes ours must have
            reply = await http.post(f"{oe_counter_url}/oe_counter/{route}", json=request.model_dump())
            assert reply.status_code == 200, reply.text
            theirs[route] = reply.json()
        assert (await http.get(f"{ours.base_url}/list_environments")).json() == ["catch"]
        splits = (await http.get(f"{ours.base_url}/catch/splits")).json()
        assert all({"name", "type"} <= set(s) and s["type"] in ("train", "validation", "test") for s in splits)
        for route, request in requests:
            reply = await http.post(f"{ours.base_url}/catch/{route}", json=request.model_dump())
            assert reply.status_code == 200, reply.text
            body = reply.json()
            assert set(body) == set(theirs[route]), route
            assert type(body[next(iter(body))]) is type(theirs[route][next(iter(theirs[route]))]), route
        assert body["tasks"][1] == {"id": "test-1", "index": 1, "seed": 1_000_001}
        # both refuse what OpenEnv's request models refuse (extra="forbid", a missing field) with 422
        for base, name in ((oe_counter_url, "oe_counter"), (ours.base_url, "catch")):
            assert (await http.post(f"{base}/{name}/task", json={"split": "test"})).status_code == 422
            assert (await http.post(f"{base}/{name}/tasks", json={"split": "test", "x": 1})).status_code == 422
            assert (await http.post(f"{base}/{name}/task", json={"split": "test", "index": 99_000_000})).status_code == 400
            assert (await http.get(f"{base}/nope/splits")).status_code == 404


@needs_task_api
async def test_both_servers_answer_501_where_the_env_has_no_tasks(oe_echo_url: str) -> None:
    async with serve_process("counter") as (ours, _), httpx.AsyncClient(timeout=30) as http:
        for base, name in ((oe_echo_url, "echo_env"), (ours.base_url, "counter")):
            reply = await http.post(f"{base}/{name}/num_tasks", json={"split": "test"})
            assert reply.status_code == 501, (base, reply.text)
            assert reply.json()["detail"] == "num_tasks is not supported for this environment"
            with pytest.raises(TasksNotSupported):
                await TaskClient(Endpoint(base)).list_splits()
