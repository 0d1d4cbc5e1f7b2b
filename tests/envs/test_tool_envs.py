"""calendar and mock_apis: scripted agents solve every task kind through the tools; wrong work scores less."""

from __future__ import annotations

from typing import Any

import pytest
from openenv.core import GenericEnvClient as OEGenericEnvClient

from openenv_train.core import CallToolAction
from openenv_train.envs.calendar_tools import KINDS as CAL_KINDS
from openenv_train.envs.calendar_tools import CalendarEnvironment
from openenv_train.envs.mock_apis import KINDS as API_KINDS
from openenv_train.envs.mock_apis import MockAPIEnvironment
from tests.conftest import serve_inloop


def _call(env: Any, tool: str, **arguments: Any) -> Any:
    obs = env.step(CallToolAction(tool_name=tool, arguments=arguments))
    assert obs.error is None, obs.error
    return obs


def _data(env: Any, tool: str, **arguments: Any) -> Any:
    return _call(env, tool, **arguments).result["data"]


def _solve_calendar(env: CalendarEnvironment, text: str, kind: str) -> None:
    """A scripted agent that reads only the request text and the tools' answers."""
    quoted = text.split("'")
    if kind == "schedule":
        minutes, title, day = int(text.split("-minute")[0].split()[-1]), quoted[1], text.split(" on ")[1].split(",")[0]
        start = _data(env, "find_free_slots", day=day, minutes=minutes)[0]
        h, m = map(int, start.split(":"))
        end = f"{(h * 60 + m + minutes) // 60:02d}:{(h * 60 + m + minutes) % 60:02d}"
        who = title.removeprefix("sync with ").split(" and ")
        _call(env, "create_event", title=title, day=day, start=start, end=end, attendees=who)
    elif kind == "reschedule":
        words = text.split()
        old_day, old_start, new_day, new_start = words[-10], words[-8], words[-6], words[-4].rstrip(",")
        event = next(e for e in _data(env, "list_events", day=old_day) if e["start"] == old_start)
        _call(env, "move_event", event_id=event["id"], day=new_day, start=new_start)
    elif kind == "cancel":
        day, person = text.split(" on ")[1].split()[0], text.split(" that ")[1].split()[0]
        for event in _data(env, "list_events", day=day, attendee=person):
            _call(env, "delete_event", event_id=event["id"])
    elif kind == "complete_tag":
        for todo in _data(env, "list_todos", tag=quoted[1]):
            _call(env, "complete_todo", todo_id=todo["id"])
    else:
        _call(env, "add_todo", title=quoted[1], tag=quoted[3], due=text.rstrip(".").split()[-1])


@pytest.mark.parametrize("kind", CAL_KINDS)
def test_calendar_tasks_are_solvable_and_checked(kind: str) -> None:
    for seed in range(3):
        env = CalendarEnvironment()
        first = env.reset(seed=seed, kind=kind)
        wrong = env.step(CallToolAction(tool_name="submit", arguments={}))
        assert wrong.reward == 0.0 and wrong.done is True
        env.reset(seed=seed, kind=kind)
        _solve_calendar(env, first.task, kind)
        done = _call(env, "submit")
        assert done.reward == 1.0, (first.task, done.result["data"])
        assert env.step(CallToolAction(tool_name="list_todos", arguments={})).error is not None


def test_calendar_tasks_move_off_a_full_day() -> None:
    # seed 1495 drew a reschedule to a day with no slot of the event's length (an IndexError before); an unseeded
    # reset, as the constructor makes, hit the same in a schedule task about once in a thousand
    env = CalendarEnvironment()
    first = env.reset(seed=1495, kind="reschedule")
    _solve_calendar(env, first.task, "reschedule")
    assert _call(env, "submit").reward == 1.0


def test_calendar_refuses_overlaps_and_bad_times() -> None:
    env = CalendarEnvironment()
    env.reset(seed=0)
    busy = _data(env, "list_events")[0]
    clash = env.step(CallToolAction(tool_name="create_event", arguments={
        "title": "x", "day": busy["day"], "start": busy["start"], "end": busy["end"]}))
    assert clash.error is not None and "overlaps" in clash.error.message
    bad = env.step(CallToolAction(tool_name="find_free_slots", arguments={"day": "2026-03-02", "minutes": 2}))
    assert bad.error is not None
    late = env.step(CallToolAction(tool_name="create_event", arguments={
        "title": "x", "day": "2026-03-02", "start": "25:00", "end": "26:00"}))
    assert late.error is not None and "HH:MM" in late.error.message or "not a time" in late.error.message


def _solve_request(env: MockAPIEnvironment, kind: str) -> Any:
    task = env.task  # the expected calls are the test's oracle; the agent's part is to make them
    results = [_data(env, call.name, **call.arguments) for call in task.calls]
    if kind == "book_cheapest":
        return results[-1]["booking_code"]
    return task.answer


@pytest.mark.parametrize("kind", API_KINDS)
def test_mock_api_requests_score_calls_and_answer(kind: str) -> None:
    env = MockAPIEnvironment()
    env.reset(seed=4, kind=kind)
    answer = _solve_request(env, kind)
    done = _call(env, "submit_answer", answer=answer)
    assert done.reward == 1.0 and done.done is True
    env.reset(seed=4, kind=kind)
    partial = _call(env, "submit_answer", answer=None)
    assert partial.reward == 0.0  # no calls made: nothing of the work is done


def test_mock_api_scores_partial_work() -> None:
    env = MockAPIEnvironment()
    first = env.reset(seed=1, kind="book_cheapest")
    flights = _data(env, "search_flights", **env.task.calls[0].arguments)
    priciest = max(flights, key=lambda f: f["price_usd"])
    name = first.request.split(" for ")[1].split(",")[0]
    code = _data(env, "book_flight", flight_id=priciest["flight_id"], passenger_name=name)["booking_code"]
    scored = _call(env, "submit_answer", answer=code)
    assert scored.reward == pytest.approx(1 / 3) and scored.result["data"]["answer_correct"] is False


async def test_openenv_client_uses_the_tools_over_the_wire() -> None:
    async with serve_inloop(MockAPIEnvironment) as server:
        async with OEGenericEnvClient(base_url=server.url) as client:
            first = await client.reset(seed=2, kind="currency")
            assert "How much is" in first.observation["request"]
            words = first.observation["request"].rstrip("?").split()
            args = {"amount": float(words[3]), "from_currency": words[4], "to_currency": words[-1]}
            result = await client.step({"type": "call_tool", "tool_name": "convert_currency", "arguments": args})
            converted = result.observation["result"]["data"]["converted"]
            result = await client.step({"type": "call_tool", "tool_name": "submit_answer",
                                        "arguments": {"answer": converted}})
            assert result.reward == 1.0 and result.done is True
