"""Seeded synthetic daily bars: geometric Brownian motion with Markov regimes and jumps."""

from __future__ import annotations

import datetime as dt
import math
import random
from dataclasses import dataclass

__all__ = ["Bar", "REGIMES", "synthetic_bars"]


@dataclass(frozen=True)
class Regime:
    """Daily drift and volatility of one market regime."""

    name: str
    drift: float
    vol: float


REGIMES = (Regime("calm", 0.0003, 0.007), Regime("bull", 0.0010, 0.012), Regime("bear", -0.0012, 0.022))
#: Daily chance of leaving the current regime, and of a price jump.
SWITCH_P, JUMP_P = 0.03, 0.02
START_DATE = dt.date(2020, 1, 2)


@dataclass(frozen=True)
class Bar:
    """One daily OHLCV bar of one symbol."""

    date: str
    open: float
    high: float
    low: float
    close: float
    volume: float
    regime: str


def _business_days(count: int) -> list[str]:
    days: list[str] = []
    day = START_DATE
    while len(days) < count:
        if day.weekday() < 5:
            days.append(day.isoformat())
        day += dt.timedelta(days=1)
    return days


def synthetic_bars(seed: int, symbols: list[str], count: int) -> dict[str, list[Bar]]:
    """``count`` bars per symbol; the same seed gives the same bars.

    All symbols share one regime path (a market factor), each with its own beta,
    idiosyncratic noise and jumps, so they are correlated but not identical.
    """
    rng = random.Random(f"trading/{seed}")
    dates = _business_days(count)
    regime_path, regime = [], rng.randrange(len(REGIMES))
    market = []
    for _ in range(count):
        if rng.random() < SWITCH_P:
            regime = rng.choice([i for i in range(len(REGIMES)) if i != regime])
        regime_path.append(REGIMES[regime])
        market.append(rng.gauss(0.0, 1.0))
    bars: dict[str, list[Bar]] = {}
    for symbol in symbols:
        beta, price = rng.uniform(0.6, 1.4), rng.uniform(20.0, 200.0)
        series = []
        for i in range(count):
            reg = regime_path[i]
            shock = beta * market[i] * 0.8 + rng.gauss(0.0, 1.0) * 0.6
            log_ret = reg.drift - 0.5 * reg.vol**2 + reg.vol * shock
            if rng.random() < JUMP_P:
                log_ret += rng.gauss(-0.01, 0.05)
            open_ = price * math.exp(rng.gauss(0.0, reg.vol * 0.25))
            close = price * math.exp(log_ret)
            spread = abs(rng.gauss(0.0, reg.vol * 0.5))
            high = max(open_, close) * math.exp(spread)
            low = min(open_, close) * math.exp(-abs(rng.gauss(0.0, reg.vol * 0.5)))
            volume = round(1e6 * math.exp(rng.gauss(0.0, 0.3)) * (1.0 + 20 * abs(log_ret)))
            series.append(Bar(dates[i], round(open_, 4), round(high, 4), round(low, 4), round(close, 4),
                              float(volume), reg.name))
            price = close
        bars[symbol] = series
    return bars
