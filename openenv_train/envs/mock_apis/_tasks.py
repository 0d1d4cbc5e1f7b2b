"""Seeded requests with the function calls they need (BFCL-style) and the expected final answer."""

from __future__ import annotations

import math
import random
from dataclasses import dataclass, field
from typing import Any

from ._apis import CITIES, CURRENCIES, DATES, STOCKS, MockServices

__all__ = ["KINDS", "Call", "MockTask", "calls_match", "make_task", "same_value"]

KINDS = ("weather", "currency", "compare_weather", "book_cheapest", "portfolio_value", "message")
PEOPLE = ["alice", "bob", "chen", "dana"]


@dataclass(frozen=True)
class Call:
    """An expected function call: name and the arguments that must match."""

    name: str
    arguments: dict[str, Any]


@dataclass(frozen=True)
class MockTask:
    kind: str
    text: str
    calls: list[Call]
    answer: str | float | None
    """None when no answer is needed (the calls are the work)."""
    notes: dict[str, Any] = field(default_factory=dict)


def same_value(expected: Any, got: Any) -> bool:
    """Equal after normalising: numbers within 0.1% (or 0.01), text case- and space-blind."""
    if isinstance(expected, float | int) and not isinstance(expected, bool):
        try:
            return math.isclose(float(got), float(expected), rel_tol=1e-3, abs_tol=0.01)
        except (TypeError, ValueError):
            return False
    return str(got).strip().lower() == str(expected).strip().lower()


def calls_match(expected: Call, name: str, arguments: dict[str, Any]) -> bool:
    """BFCL's AST check, simplified: same function, and every expected argument equal (case-blind; numbers ~)."""
    return name == expected.name and all(same_value(v, arguments.get(k)) for k, v in expected.arguments.items())


def make_task(services: MockServices, seed: int, kind: str | None) -> MockTask:
    """A task of ``kind`` (drawn from the seed when None). Raises ValueError for unknown kinds."""
    rng = random.Random(f"mock-task/{seed}")
    kind = kind or rng.choice(KINDS)
    if kind not in KINDS:
        raise ValueError(f"task kind {kind!r} is unknown; use one of {', '.join(KINDS)}")
    date = rng.choice(DATES)
    if kind == "weather":
        city, unit = rng.choice(CITIES), rng.choice(["celsius", "fahrenheit"])
        temp = services.weather(city, date, unit)["temperature"]
        return MockTask(kind, f"What will the temperature be in {city.title()} on {date}, in {unit}?",
                        [Call("get_weather", {"city": city, "date": date, "unit": unit})], temp)
    if kind == "currency":
        amount, src, dst = rng.choice([50, 120, 999.5, 2500]), *rng.sample(list(CURRENCIES), 2)
        converted = services.convert(amount, src, dst)["converted"]
        return MockTask(kind, f"How much is {amount} {src} in {dst}?",
                        [Call("convert_currency", {"amount": amount, "from_currency": src, "to_currency": dst})],
                        converted)
    if kind == "compare_weather":
        a, b = rng.sample(CITIES, 2)
        ta, tb = (services.weather(c, date, "celsius")["temperature"] for c in (a, b))
        return MockTask(kind, f"Which will be warmer on {date}: {a.title()} or {b.title()}? Answer with the city.",
                        [Call("get_weather", {"city": a, "date": date}), Call("get_weather", {"city": b, "date": date})],
                        a if ta >= tb else b)
    if kind == "book_cheapest":
        src, dst = rng.sample(CITIES, 2)
        name = rng.choice(PEOPLE).title()
        cheapest = min(services.flights(src, dst, date), key=lambda f: (f["price_usd"], f["flight_id"]))
        code = services.book(cheapest["flight_id"], name)["booking_code"]
        services.bookings.clear()  # the expected booking was only computed, not made
        return MockTask(kind, f"Book the cheapest flight from {src.title()} to {dst.title()} on {date} for {name}, "
                              "and answer with the booking code.",
                        [Call("search_flights", {"origin": src, "destination": dst, "date": date}),
                         Call("book_flight", {"flight_id": cheapest["flight_id"], "passenger_name": name})], code)
    if kind == "portfolio_value":
        sym, shares, cur = rng.choice(STOCKS), rng.choice([3, 10, 25]), rng.choice(["EUR", "GBP", "JPY"])
        usd = round(services.stock_price(sym)["price_usd"] * shares, 2)
        value = services.convert(usd, "USD", cur)["converted"]
        return MockTask(kind, f"What are {shares} shares of {sym} worth in {cur} at today's price?",
                        [Call("get_stock_price", {"symbol": sym}),
                         Call("convert_currency", {"amount": usd, "from_currency": "USD", "to_currency": cur})], value)
    person, words = rng.choice(PEOPLE), rng.choice(["running late, start without me", "the report is ready"])
    return MockTask("message", f"Send {person.title()} a message saying exactly: {words}",
                    [Call("send_message", {"recipient": person, "text": words})], None)
