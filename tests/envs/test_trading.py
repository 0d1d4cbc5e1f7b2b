"""The trading simulator: seeded prices, costs in the reward, metrics at the end, FinRL's shape, the MCP variant."""

from __future__ import annotations

import math

import pytest
from openenv.core import GenericEnvClient as OEGenericEnvClient
from pydantic import ValidationError

from openenv_train.core import CallToolAction
from openenv_train.envs.trading import (
    TradingAction,
    TradingEnvironment,
    TradingMCPEnvironment,
    performance,
    synthetic_bars,
)
from tests.conftest import serve_inloop


def test_prices_are_seeded_and_regimes_switch() -> None:
    a = synthetic_bars(7, ["AAA", "BBB"], 400)
    assert a == synthetic_bars(7, ["AAA", "BBB"], 400) and a != synthetic_bars(8, ["AAA", "BBB"], 400)
    assert len({bar.regime for bar in a["AAA"]}) >= 2
    assert all(b.low <= min(b.open, b.close) <= max(b.open, b.close) <= b.high for b in a["AAA"])


def test_holding_cash_earns_nothing_and_trading_pays_fees_and_slippage() -> None:
    env = TradingEnvironment()
    env.reset(seed=3, steps=5, fee_bps=0, slippage_bps=0)
    assert env.step(TradingAction()).reward == 0.0
    env.reset(seed=3, steps=5, fee_bps=50, slippage_bps=20)
    obs = env.reset(seed=3, steps=5, fee_bps=50, slippage_bps=20)
    price = obs.prices["AAA"]
    after = env.step(TradingAction(side="buy", size=10))
    next_price = after.prices["AAA"]
    paid = 10 * price * 1.002 * 1.005
    expected = math.log((10_000 - paid + 10 * next_price) / 10_000)
    assert after.reward == pytest.approx(expected, rel=1e-6)
    assert env.state.costs_paid == pytest.approx(10 * price * (0.002 + 1.002 * 0.005), rel=1e-4)


def test_the_last_step_reports_return_against_buy_and_hold() -> None:
    env = TradingEnvironment()
    env.reset(seed=11, steps=20, fee_bps=0, slippage_bps=0)
    obs = env.step(TradingAction(target_position=1.0))
    while not obs.done:
        assert obs.summary is None
        obs = env.step(TradingAction())
    assert obs.summary is not None and obs.steps_left == 0
    # All in at the first close without costs is buy-and-hold, to rounding of the shares.
    assert obs.summary["total_return"] == pytest.approx(obs.summary["buy_and_hold_return"], abs=1e-6)
    assert obs.summary["trades"] == 1.0 and 0 <= obs.summary["max_drawdown"] < 1
    assert env.step(TradingAction()).message.startswith("the run is over")


def test_performance_metrics() -> None:
    metrics = performance([100, 110, 99, 120], [100, 100, 100, 150])
    assert metrics["total_return"] == pytest.approx(0.2) and metrics["buy_and_hold_return"] == pytest.approx(0.5)
    assert metrics["max_drawdown"] == pytest.approx(0.1) and metrics["sharpe"] > 0


def test_bad_actions_are_named() -> None:
    with pytest.raises(ValidationError, match="not several"):
        TradingAction(side="buy", size=1, target_position=0.5)
    with pytest.raises(ValidationError, match=r"\[-1, 1\]"):
        TradingAction(actions=[2.0])
    env = TradingEnvironment()
    env.reset(seed=0, num_assets=2)
    assert "this run trades 2 assets" in env.step(TradingAction(actions=[0.1])).message
    assert "allow_short" in env.step(TradingAction(target_position=-0.5)).message
    assert "unknown symbol" in env.step(TradingAction(side="buy", size=1, symbol="ZZZ")).message
    with pytest.raises(ValueError, match="num_assets=9"):
        env.reset(num_assets=9)


async def test_openenv_client_drives_the_finrl_shape() -> None:
    async with serve_inloop(TradingEnvironment) as server:
        async with OEGenericEnvClient(base_url=server.url) as client:
            first = await client.reset(seed=2, num_assets=3, max_shares=10)
            obs = first.observation
            assert len(obs["state"]) == 1 + 3 + 3 and obs["portfolio_value"] == 10_000 and obs["date"]
            result = await client.step({"actions": [1.0, 0.5, 0.0]})
            held = result.observation["state"][4:]
            assert held == [10.0, 5.0, 0.0]
            result = await client.step({"actions": [-1.0, -1.0, 0.0]})
            assert result.observation["state"][4:] == [0.0, 0.0, 0.0]
            assert (await client.state())["trades"] == 4


def test_mcp_variant_trades_and_advances() -> None:
    env = TradingMCPEnvironment()
    first = env.reset(seed=4, steps=3, fee_bps=0, slippage_bps=0)
    quote = env.step(CallToolAction(tool_name="get_quote", arguments={})).result["data"]
    assert quote["close"] == first.prices["AAA"]
    history = env.step(CallToolAction(tool_name="get_history", arguments={"bars": 4})).result["data"]
    assert [b["close"] for b in history] == [b["close"] for b in first.bars[-4:]]
    env.step(CallToolAction(tool_name="place_order", arguments={"side": "buy", "size": 20}))
    moved = env.step(CallToolAction(tool_name="advance", arguments={"bars": 10}))
    assert moved.done is True and moved.reward is not None
    portfolio = env.step(CallToolAction(tool_name="get_portfolio", arguments={})).result["data"]
    assert portfolio["positions"] == {"AAA": 20.0} and portfolio["summary"]["trades"] == 1.0
    assert math.log(portfolio["equity"] / 10_000) == pytest.approx(moved.reward)
    refused = env.step(CallToolAction(tool_name="place_order", arguments={"side": "sell", "size": 1}))
    assert refused.error is not None and "run is over" in refused.error.message
