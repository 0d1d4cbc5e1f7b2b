"""The mock services: deterministic weather, exchange rates, stock prices, flights and messages."""

from __future__ import annotations

import hashlib
import random
from dataclasses import dataclass, field
from typing import Any

__all__ = ["CITIES", "CURRENCIES", "STOCKS", "MockServices"]

CITIES = ["paris", "tokyo", "lima", "oslo", "cairo", "sydney", "toronto", "mumbai"]
#: Units of a currency per US dollar (fixed, so answers are checkable).
CURRENCIES = {"USD": 1.0, "EUR": 0.92, "GBP": 0.79, "JPY": 151.0, "INR": 83.2, "CAD": 1.36, "AUD": 1.52}
STOCKS = ["ACME", "GLOBX", "INITECH", "UMBRL", "WAYNE"]
DATES = ["2026-05-04", "2026-05-05", "2026-05-06", "2026-05-07"]


def _rng(*parts: object) -> random.Random:
    return random.Random(hashlib.sha256("/".join(map(str, parts)).encode()).hexdigest())


def _pick(value: str, known: list[str], what: str) -> str:
    if value.strip().lower() not in known:
        raise ValueError(f"unknown {what} {value!r}; known: {', '.join(known)}")
    return value.strip().lower()


@dataclass
class MockServices:
    """The services of one episode; prices and flights depend on the seed, weather on city and date."""

    seed: int
    bookings: list[dict[str, Any]] = field(default_factory=list)
    messages: list[dict[str, str]] = field(default_factory=list)

    def weather(self, city: str, date: str, unit: str) -> dict[str, Any]:
        city = _pick(city, CITIES, "city")
        if date not in DATES:
            raise ValueError(f"no forecast for {date!r}; forecasts cover {', '.join(DATES)}")
        rng = _rng("weather", city, date)
        celsius = round(rng.uniform(-5, 35), 1)
        if unit not in ("celsius", "fahrenheit"):
            raise ValueError(f"unit {unit!r} is not celsius or fahrenheit")
        temp = celsius if unit == "celsius" else round(celsius * 9 / 5 + 32, 1)
        return {"city": city, "date": date, "temperature": temp, "unit": unit,
                "conditions": rng.choice(["sunny", "cloudy", "rain", "snow", "windy"])}

    def convert(self, amount: float, from_currency: str, to_currency: str) -> dict[str, Any]:
        codes = list(CURRENCIES)
        src, dst = from_currency.strip().upper(), to_currency.strip().upper()
        for code in (src, dst):
            if code not in CURRENCIES:
                raise ValueError(f"unknown currency {code!r}; known: {', '.join(codes)}")
        return {"amount": amount, "from": src, "to": dst,
                "converted": round(amount / CURRENCIES[src] * CURRENCIES[dst], 2)}

    def stock_price(self, symbol: str) -> dict[str, Any]:
        sym = symbol.strip().upper()
        if sym not in STOCKS:
            raise ValueError(f"unknown symbol {symbol!r}; known: {', '.join(STOCKS)}")
        return {"symbol": sym, "price_usd": round(_rng("stock", self.seed, sym).uniform(10, 500), 2)}

    def flights(self, origin: str, destination: str, date: str) -> list[dict[str, Any]]:
        src, dst = _pick(origin, CITIES, "city"), _pick(destination, CITIES, "city")
        if date not in DATES:
            raise ValueError(f"no flights listed for {date!r}; dates: {', '.join(DATES)}")
        rng = _rng("flights", self.seed, src, dst, date)
        out = []
        for i in range(rng.randint(2, 4)):
            out.append({"flight_id": f"{src[:2].upper()}{dst[:2].upper()}{rng.randint(100, 999)}{i}",
                        "origin": src, "destination": dst, "date": date,
                        "departure": f"{rng.randint(6, 22):02d}:{rng.choice(['00', '15', '30', '45'])}",
                        "price_usd": rng.randint(80, 900)})
        return out

    def book(self, flight_id: str, passenger_name: str) -> dict[str, Any]:
        code = "BK" + hashlib.sha256(f"{self.seed}/{flight_id}/{passenger_name}".encode()).hexdigest()[:6].upper()
        booking = {"booking_code": code, "flight_id": flight_id, "passenger_name": passenger_name}
        self.bookings.append(booking)
        return booking

    def send(self, recipient: str, text: str) -> dict[str, Any]:
        self.messages.append({"recipient": recipient, "text": text})
        return {"sent": True, "message_id": len(self.messages)}
