"""Wire models of the trading env: one action model for the three action shapes, and the observation."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field, model_validator

from ...core import Action, Observation, State

__all__ = ["TradingAction", "TradingObservation", "TradingState"]


class TradingAction(Action):
    """One decision per bar: buy/sell/hold with a size, a target position, or FinRL's per-asset actions.

    Give one form: ``{"side": "buy", "size": 10}``, ``{"target_position": 0.5}`` or
    ``{"actions": [0.2, -1.0]}``. ``{}`` holds.
    """

    side: Literal["buy", "sell", "hold"] = Field(default="hold", description="Order side; hold trades nothing.")
    size: float = Field(default=0.0, ge=0, description="Shares to buy or sell with side.")
    target_position: float | None = Field(
        default=None, ge=-1.0, le=1.0,
        description="Trade so the position is this fraction of equity (negative = short, needs allow_short).",
    )
    symbol: str | None = Field(default=None, description="Symbol for side/target_position; default the first.")
    actions: list[float] | None = Field(
        default=None,
        description="FinRL's shape (OpenEnv finrl_env): one value in [-1, 1] per asset, times max_shares shares.",
    )

    @model_validator(mode="after")
    def _one_form(self) -> TradingAction:
        forms = [self.side != "hold", self.target_position is not None, self.actions is not None]
        if sum(forms) > 1:
            raise ValueError("give one of side/size, target_position or actions, not several")
        if self.actions is not None and any(not -1.0 <= a <= 1.0 for a in self.actions):
            raise ValueError(f"actions must each be in [-1, 1], got {self.actions}")
        return self


class TradingObservation(Observation):
    """The market after the step: the last bars, the account, and at the end the run's metrics."""

    date: str = Field(default="", description="Date of the current bar (FinRL's date).")
    bars: list[dict[str, Any]] = Field(default_factory=list, description="The last `window` bars of every symbol.")
    bars_text: str = Field(default="", description="The same bars as a text table.")
    prices: dict[str, float] = Field(default_factory=dict, description="Current close per symbol.")
    cash: float = 0.0
    positions: dict[str, float] = Field(default_factory=dict, description="Shares held per symbol.")
    equity: float = Field(default=0.0, description="Cash plus marked positions.")
    portfolio_value: float = Field(default=0.0, description="Equity again, under FinRL's name.")
    state: list[float] = Field(default_factory=list, description="FinRL's state: cash, closes, holdings.")
    steps_left: int = 0
    message: str = Field(default="", description="Clipped orders or refused actions, else empty.")
    summary: dict[str, float] | None = Field(
        default=None,
        description="At the end: total_return, buy_and_hold_return, excess_return, sharpe, max_drawdown, "
                    "costs_paid, trades, final_equity.",
    )


class TradingState(State):
    """Episode state: the run's options and the account's totals."""

    symbols: list[str] = Field(default_factory=list)
    date: str = ""
    equity: float = 0.0
    trades: int = 0
    costs_paid: float = 0.0
    options: dict[str, Any] = Field(default_factory=dict, description="The reset options of this run.")
