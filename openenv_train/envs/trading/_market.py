"""One simulated trading run: the price path, the clock and the account, shared by the typed and MCP envs."""

from __future__ import annotations

import math
from dataclasses import dataclass

from ._portfolio import Fill, Portfolio, performance
from ._prices import Bar, synthetic_bars

__all__ = ["Market", "MarketConfig", "bars_text"]

SYMBOLS = ("AAA", "BBB", "CCC", "DDD", "EEE")


@dataclass(frozen=True)
class MarketConfig:
    """Reset options of a trading run."""

    num_assets: int = 1
    """Symbols traded (1-5): AAA, BBB, ..."""
    steps: int = 60
    """Bars the episode advances through before it ends."""
    window: int = 10
    """Past bars shown in each observation."""
    initial_cash: float = 10_000.0
    fee_bps: float = 10.0
    """Fee per trade, basis points of notional."""
    slippage_bps: float = 5.0
    """Fill price moved against the order, in basis points."""
    allow_short: bool = False
    max_shares: int = 100
    """Shares that a finrl-style action of 1.0 buys (FinRL's hmax)."""

    def check(self) -> None:
        """Raises ValueError naming the option out of range."""
        limits = {"num_assets": (1, len(SYMBOLS)), "steps": (1, 2000), "window": (1, 200)}
        for name, (low, high) in limits.items():
            value = getattr(self, name)
            if not low <= value <= high:
                raise ValueError(f"{name}={value} is out of range: use {low}..{high}")
        if self.initial_cash <= 0 or self.fee_bps < 0 or self.slippage_bps < 0 or self.max_shares < 1:
            raise ValueError("initial_cash and max_shares must be positive; fee_bps and slippage_bps >= 0")


def bars_text(bars: list[Bar], symbol: str) -> str:
    """A fixed-width table of bars, one line each."""
    lines = [f"{symbol}  date        open      high      low       close     volume"]
    lines += [f"{symbol}  {b.date}  {b.open:<9.2f} {b.high:<9.2f} {b.low:<9.2f} {b.close:<9.2f} {b.volume:.0f}"
              for b in bars]
    return "\n".join(lines)


class Market:
    """Bars ``0..window-1`` are history; the agent trades at the close of bar ``t`` and ``advance`` moves on."""

    def __init__(self, seed: int, config: MarketConfig) -> None:
        config.check()
        self.config = config
        self.symbols = list(SYMBOLS[: config.num_assets])
        self.bars = synthetic_bars(seed, self.symbols, config.window + config.steps)
        self.t = config.window - 1
        self.end = config.window + config.steps - 1
        self.account = Portfolio(config.initial_cash, config.fee_bps, config.slippage_bps, config.allow_short)
        self.equity_curve = [config.initial_cash]
        first = self.prices()
        # Buy and hold: the initial cash split equally, bought at the first close without costs.
        self._hold_shares = {s: config.initial_cash / len(self.symbols) / first[s] for s in self.symbols}
        self.hold_curve = [config.initial_cash]
        self.fills: list[Fill] = []

    @property
    def done(self) -> bool:
        return self.t >= self.end

    @property
    def date(self) -> str:
        return self.bars[self.symbols[0]][self.t].date

    def prices(self) -> dict[str, float]:
        """Each symbol's close at the current bar."""
        return {s: self.bars[s][self.t].close for s in self.symbols}

    def equity(self) -> float:
        return self.account.equity(self.prices())

    def symbol(self, name: str | None) -> str:
        """The symbol meant by ``name`` (None = the first). Raises ValueError naming the known ones."""
        if name is None:
            return self.symbols[0]
        if name.upper() not in self.symbols:
            raise ValueError(f"unknown symbol {name!r}: this run trades {', '.join(self.symbols)}")
        return name.upper()

    def order(self, symbol: str, shares: float) -> str:
        """Trade at the current close (plus slippage and fees); returns a note when clipped."""
        fill, note = self.account.order(symbol, shares, self.prices()[symbol])
        if fill is not None:
            self.fills.append(fill)
        return note

    def target(self, symbol: str, fraction: float) -> str:
        """Trade so the position is ``fraction`` of equity (negative = short)."""
        price = self.prices()[symbol]
        want = fraction * self.equity() / price
        delta = want - self.account.positions.get(symbol, 0.0)
        if abs(delta) * price <= 1e-6:
            return ""
        note = self.order(symbol, delta)
        # A full target buy cannot also pay its own fees: being clipped to the cash is expected, not news.
        return "" if note.startswith("buy of") else note

    def advance(self) -> float:
        """Move to the next bar; returns the change in log equity over it."""
        before = self.equity_curve[-1]
        self.t += 1
        after = self.equity()
        self.equity_curve.append(after)
        self.hold_curve.append(sum(n * p for n, p in zip(self._hold_shares.values(), self.prices().values(),
                                                         strict=True)))
        return math.log(max(after, 1e-9) / max(before, 1e-9))

    def history(self, symbol: str, n: int) -> list[Bar]:
        """The last ``n`` bars up to and including the current one."""
        return self.bars[symbol][max(0, self.t - n + 1): self.t + 1]

    def summary(self) -> dict[str, float]:
        """Metrics of the run so far (return vs buy-and-hold, Sharpe, max drawdown, costs, trades)."""
        metrics = performance(self.equity_curve, self.hold_curve)
        metrics.update(costs_paid=self.account.costs_paid, trades=float(self.account.trades),
                       final_equity=self.equity_curve[-1])
        return {k: round(v, 6) for k, v in metrics.items()}

    def finrl_state(self) -> list[float]:
        """FinRL's state vector: cash, then each close, then each holding."""
        prices = self.prices()
        return [round(self.account.cash, 6), *(prices[s] for s in self.symbols),
                *(self.account.positions.get(s, 0.0) for s in self.symbols)]
