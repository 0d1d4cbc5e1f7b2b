"""MockAPIEnvironment: answer a request by calling mock web APIs; scored on the calls made and the answer."""

from __future__ import annotations

import random
from importlib import resources
from typing import Annotated, Any, ClassVar, Literal

from pydantic import Field

from ...core import CallToolObservation, ListToolsObservation, Observation, State, ToolError, ToolErrorType
from ...server import MCPEnvironment, ToolCallFailed, tool
from ._apis import MockServices
from ._tasks import KINDS, MockTask, calls_match, make_task, same_value

__all__ = ["MockAPIEnvironment", "MockAPIState", "MockAPITaskObservation"]


class MockAPITaskObservation(Observation):
    """The reset observation: the user's request."""

    request: str = Field(default="", description="What the user asks for.")
    kind: str = Field(default="", description=f"Task kind: one of {', '.join(KINDS)}.")


class MockAPIState(State):
    """Episode state: the calls made and, once submitted, the score."""

    kind: str = ""
    calls: list[dict[str, Any]] = Field(default_factory=list, description="Successful API calls: name, arguments.")
    submitted: bool = False
    score: float | None = None


class MockAPIEnvironment(MCPEnvironment):
    """A suite of mock APIs (weather, currency, stocks, flights, messages) in the style of BFCL.

    Each episode is one user request that needs one or more API calls; ``submit_answer``
    ends it and pays the fraction of the needed calls made with the right arguments
    (BFCL-style argument matching) plus the answer, so 1.0 is every call and the answer right.
    """

    name = "mock_apis"
    readme = resources.files(__package__).joinpath("README.md").read_text(encoding="utf-8")
    observation_type: ClassVar[Any] = ListToolsObservation | CallToolObservation | MockAPITaskObservation
    state_type = MockAPIState
    _state: MockAPIState

    def __init__(self) -> None:
        super().__init__()
        self.reset()

    def reset(self, *, seed: int | None = None, episode_id: str | None = None,  # type: ignore[override]
              kind: str | None = None) -> MockAPITaskObservation:
        """Start an episode with a request drawn from ``seed`` (of ``kind`` when given)."""
        root = seed if seed is not None else random.SystemRandom().getrandbits(63)
        services = MockServices(root)
        task = make_task(services, root, kind)
        super().reset(seed=seed, episode_id=episode_id)
        self._services, self._task = services, task
        self._state = MockAPIState(episode_id=self._state.episode_id, kind=task.kind)
        return MockAPITaskObservation(request=task.text, kind=task.kind, reward=0.0)

    @property
    def state(self) -> MockAPIState:
        return self._state

    @property
    def task(self) -> MockTask:
        return self._task

    def step(self, action: Any) -> Observation:
        obs = super().step(action)
        assert isinstance(obs, Observation), "mock_apis has only sync tools"
        obs.done = self._state.submitted
        return obs

    def call_tool(self, tool_name: str, arguments: dict[str, Any]) -> Any:
        if self._state.submitted and tool_name in self.tools:
            raise ToolCallFailed(ToolError(error_type=ToolErrorType.EXECUTION_ERROR,
                                           message="the answer was submitted; call reset for a new request"))
        value = super().call_tool(tool_name, arguments)
        if tool_name not in ("get_request", "submit_answer"):
            self._state.calls.append({"name": tool_name, "arguments": dict(arguments)})
        return value

    def reward_for(self, tool_name: str, arguments: dict[str, Any], value: Any) -> float | None:
        return float(value["score"]) if tool_name == "submit_answer" else None

    @tool
    def get_request(self) -> dict[str, str]:
        """The user's request."""
        return {"request": self._task.text, "kind": self._task.kind}

    @tool
    def get_weather(self, city: str, date: str,
                    unit: Literal["celsius", "fahrenheit"] = "celsius") -> dict[str, Any]:
        """Forecast for a city on a date (YYYY-MM-DD): temperature in the unit, and conditions."""
        return self._services.weather(city, date, unit)

    @tool
    def convert_currency(self, amount: float, from_currency: str, to_currency: str) -> dict[str, Any]:
        """Convert an amount between ISO currency codes (USD, EUR, GBP, JPY, INR, CAD, AUD) at today's rate."""
        return self._services.convert(amount, from_currency, to_currency)

    @tool
    def get_stock_price(self, symbol: str) -> dict[str, Any]:
        """Today's price of a stock in US dollars."""
        return self._services.stock_price(symbol)

    @tool
    def search_flights(self, origin: str, destination: str, date: str) -> list[dict[str, Any]]:
        """Flights between two cities on a date: flight_id, departure, price_usd."""
        return self._services.flights(origin, destination, date)

    @tool
    def book_flight(self, flight_id: str, passenger_name: str) -> dict[str, Any]:
        """Book a flight for a passenger; returns the booking code."""
        return self._services.book(flight_id, passenger_name)

    @tool
    def send_message(self, recipient: str, text: Annotated[str, Field(max_length=2000)]) -> dict[str, Any]:
        """Send a text message to a contact."""
        return self._services.send(recipient, text)

    @tool
    def submit_answer(self, answer: str | float | None = None) -> dict[str, Any]:
        """Finish with the answer to the request (a number, a city, a code; omit when the calls were the task).

        Ends the episode; the score is the share of the needed calls made with the right arguments, and the answer.
        """
        task, made = self._task, list(self._state.calls)
        matched = 0
        for expected in task.calls:
            hit = next((c for c in made if calls_match(expected, c["name"], c["arguments"])), None)
            if hit is not None:
                made.remove(hit)
                matched += 1
        parts = len(task.calls) + (task.answer is not None)
        answer_ok = task.answer is None or same_value(task.answer, answer)
        score = (matched + (task.answer is not None and answer_ok)) / parts
        self._state.submitted, self._state.score = True, score
        return {"score": score, "calls_matched": matched, "calls_needed": len(task.calls),
                "answer_correct": answer_ok, "expected_answer": task.answer}
