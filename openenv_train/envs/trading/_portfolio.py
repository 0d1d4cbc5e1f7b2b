"""The trading account: cash and share positions, fills with fees and slippage, and end-of-run metrics."""

from __future__ import annotations

import math
from dataclasses import dataclass, field

__all__ = ["Fill", "Portfolio", "performance"]


@dataclass(frozen=True)
class Fill:
    """One executed order."""

    symbol: str
    shares: float
    """Signed: positive bought, negative sold."""
    price: float
    """Fill price after slippage."""
    fee: float


@dataclass
class Portfolio:
    """Cash and positions; orders fill at a price moved against the trader by ``slippage_bps``."""

    cash: float
    fee_bps: float
    slippage_bps: float
    allow_short: bool
    positions: dict[str, float] = field(default_factory=dict)
    costs_paid: float = 0.0
    trades: int = 0

    def equity(self, prices: dict[str, float]) -> float:
        """Cash plus the marked value of every position."""
        return self.cash + sum(shares * prices[s] for s, shares in self.positions.items())

    def order(self, symbol: str, shares: float, price: float) -> tuple[Fill | None, str]:
        """Buy (``shares`` > 0) or sell, clipped to what cash and the short rule allow.

        Returns:
            The fill (None when nothing traded) and a note when the order was clipped.
        """
        note = ""
        held = self.positions.get(symbol, 0.0)
        if shares < 0 and not self.allow_short and -shares > held:
            note = f"sell of {-shares:g} {symbol} clipped to the {held:g} held (allow_short is off)"
            shares = -held
        slip = self.slippage_bps / 1e4
        fill_price = price * (1 + slip) if shares > 0 else price * (1 - slip)
        if shares > 0:
            affordable = math.floor(self.cash / (fill_price * (1 + self.fee_bps / 1e4)) * 1e6) / 1e6
            if shares > affordable:
                note = f"buy of {shares:g} {symbol} clipped to the {affordable:g} that cash {self.cash:.2f} affords"
                shares = affordable
        if abs(shares) < 1e-9:
            return None, note
        notional = abs(shares) * fill_price
        fee = notional * self.fee_bps / 1e4
        self.cash -= shares * fill_price + fee
        self.positions[symbol] = held + shares
        self.costs_paid += fee + abs(shares) * abs(fill_price - price)
        self.trades += 1
        return Fill(symbol, shares, round(fill_price, 6), round(fee, 6)), note


def performance(equity: list[float], benchmark: list[float], periods_per_year: int = 252) -> dict[str, float]:
    """Total return, buy-and-hold return, excess, annualised Sharpe and max drawdown of an equity curve."""
    rets = [b / a - 1.0 for a, b in zip(equity, equity[1:], strict=False) if a > 0]
    mean = sum(rets) / len(rets) if rets else 0.0
    var = sum((r - mean) ** 2 for r in rets) / (len(rets) - 1) if len(rets) > 1 else 0.0
    sharpe = mean / math.sqrt(var) * math.sqrt(periods_per_year) if var > 0 else 0.0
    peak, drawdown = equity[0], 0.0
    for value in equity:
        peak = max(peak, value)
        drawdown = max(drawdown, 1.0 - value / peak if peak > 0 else 0.0)
    total = equity[-1] / equity[0] - 1.0
    hold = benchmark[-1] / benchmark[0] - 1.0
    return {"total_return": total, "buy_and_hold_return": hold, "excess_return": total - hold,
            "sharpe": sharpe, "max_drawdown": drawdown}
