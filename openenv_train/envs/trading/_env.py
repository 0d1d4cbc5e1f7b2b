"""TradingEnvironment: trade seeded synthetic markets one bar per step; reward = change in log equity."""

from __future__ import annotations

import dataclasses
import random
import uuid
from importlib import resources

from ...server import Environment
from ._market import Market, MarketConfig, bars_text
from ._models import TradingAction, TradingObservation, TradingState

__all__ = ["TradingEnvironment", "observe"]


def observe(market: Market, reward: float, message: str = "") -> TradingObservation:
    """The observation of ``market`` now."""
    window = market.config.window
    bars = [{"symbol": s, **dataclasses.asdict(b)} for s in market.symbols for b in market.history(s, window)]
    for bar in bars:
        bar.pop("regime")  # hidden state: the agent must infer the regime
    equity = market.equity()
    return TradingObservation(
        date=market.date,
        bars=bars,
        bars_text="\n".join(bars_text(market.history(s, window), s) for s in market.symbols),
        prices=market.prices(),
        cash=round(market.account.cash, 6),
        positions=dict(market.account.positions),
        equity=round(equity, 6),
        portfolio_value=round(equity, 6),
        state=market.finrl_state(),
        steps_left=market.end - market.t,
        message=message,
        summary=market.summary() if market.done else None,
        done=market.done,
        reward=reward,
    )


class TradingEnvironment(Environment[TradingAction, TradingObservation, TradingState]):
    """A seeded market simulator: each step trades at the close, then the market moves one bar.

    Prices are geometric Brownian motion with hidden regimes (calm, bull, bear) and jumps;
    orders pay ``fee_bps`` and ``slippage_bps``. The reward of a step is the change in log
    equity over the next bar, net of the step's costs; the last observation carries the
    run's return against buy-and-hold, Sharpe ratio and max drawdown. Actions: buy/sell/hold
    with a size, a target position, or FinRL's per-asset ``actions`` in [-1, 1].

    Example:
        >>> env = TradingEnvironment()
        >>> obs = env.reset(seed=0, steps=3)
        >>> obs = env.step(TradingAction(target_position=1.0))
        >>> obs.positions["AAA"] > 0, obs.steps_left
        (True, 2)
    """

    name = "trading"
    readme = resources.files(__package__).joinpath("README.md").read_text(encoding="utf-8")
    action_type = TradingAction
    observation_type = TradingObservation
    state_type = TradingState

    def __init__(self) -> None:
        self.reset()

    def reset(self, *, seed: int | None = None, episode_id: str | None = None,  # type: ignore[override]
              num_assets: int = 1, steps: int = 60, window: int = 10, initial_cash: float = 10_000.0,
              fee_bps: float = 10.0, slippage_bps: float = 5.0, allow_short: bool = False,
              max_shares: int = 100) -> TradingObservation:
        """Start a run on a fresh price path drawn from ``seed``.

        Raises:
            ValueError: an option is out of range (the message names it).
        """
        config = MarketConfig(num_assets=num_assets, steps=steps, window=window, initial_cash=initial_cash,
                              fee_bps=fee_bps, slippage_bps=slippage_bps, allow_short=allow_short,
                              max_shares=max_shares)
        root = seed if seed is not None else random.SystemRandom().getrandbits(63)
        self._market = Market(root, config)
        self._state = TradingState(episode_id=episode_id or uuid.uuid4().hex, symbols=self._market.symbols,
                                   options=dataclasses.asdict(config))
        self._sync()
        return observe(self._market, 0.0)

    def step(self, action: TradingAction) -> TradingObservation:
        self._state.step_count += 1
        market = self._market
        if market.done:
            return observe(market, 0.0, "the run is over; call reset to trade again")
        try:
            notes = self._trade(action)
        except ValueError as exc:  # a bad symbol or asset count: nothing traded, the market still moves
            notes = [f"action refused: {exc}"]
        reward = market.advance()
        self._sync()
        return observe(market, reward, "; ".join(n for n in notes if n))

    @property
    def state(self) -> TradingState:
        return self._state

    def _trade(self, action: TradingAction) -> list[str]:
        market = self._market
        if action.actions is not None:
            if len(action.actions) != len(market.symbols):
                raise ValueError(f"actions has {len(action.actions)} values; this run trades "
                                 f"{len(market.symbols)} assets ({', '.join(market.symbols)})")
            # FinRL sells before it buys, so sales free cash for the buys of the same step.
            order = sorted(zip(market.symbols, action.actions, strict=True), key=lambda pair: pair[1])
            return [market.order(s, round(a * market.config.max_shares)) for s, a in order]
        symbol = market.symbol(action.symbol)
        if action.target_position is not None:
            if action.target_position < 0 and not market.config.allow_short:
                raise ValueError("a negative target_position is a short: reset with allow_short=true")
            return [market.target(symbol, action.target_position)]
        if action.side == "hold" or action.size == 0:
            return []
        return [market.order(symbol, action.size if action.side == "buy" else -action.size)]

    def _sync(self) -> None:
        market, state = self._market, self._state
        state.date, state.equity = market.date, round(market.equity(), 6)
        state.trades, state.costs_paid = market.account.trades, round(market.account.costs_paid, 6)

