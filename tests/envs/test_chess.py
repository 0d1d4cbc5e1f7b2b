"""The chess env: moves in UCI and SAN, opponents, rewards, refused moves, seeding, real-server play."""

from __future__ import annotations

import random

import chess
import pytest
from openenv.core import GenericEnvClient as OEGenericEnvClient
from pydantic import ValidationError

from openenv_train.client import GenericEnvClient
from openenv_train.core import ServerError
from openenv_train.envs.chess import ChessAction, ChessEnvironment, random_move, search_move
from tests.conftest import serve_inloop, serve_process

BACK_RANK = "6k1/5ppp/8/8/8/8/8/R5K1 w - - 0 1"  # white to move mates with Ra8
DOOMED_BLACK = "7k/p5pp/8/8/8/8/5PPP/1R4K1 b - - 0 1"  # whatever a7 does, Rb8 mates
STALEMATE_IN_ONE = "7k/8/6Q1/8/8/8/8/K7 w - - 0 1"  # Qf7 stalemates black


def play(env: ChessEnvironment, move: str) -> object:
    return env.step(ChessAction(move=move))


# -- moves and turns -----------------------------------------------------------------------------
def test_start_position_observation() -> None:
    obs = ChessEnvironment().reset(seed=0)
    assert obs.fen == chess.STARTING_FEN and obs.turn == obs.agent_color == "white"
    assert len(obs.legal_moves) == 20 and obs.legal_moves == sorted(obs.legal_moves) and "e2e4" in obs.legal_moves
    assert obs.board == str(chess.Board()) and obs.result == "*" and not obs.check and not obs.done
    assert obs.last_move is None and obs.opponent_last_move is None and obs.reward == 0.0


def test_uci_and_san_moves_are_played_and_the_opponent_replies() -> None:
    env = ChessEnvironment()
    env.reset(seed=1)
    obs = env.step(ChessAction(move="e2e4"))
    assert obs.last_move == "e2e4" and obs.opponent_last_move is not None and obs.turn == "white"
    obs = env.step(ChessAction(move="Nf3"))
    assert obs.last_move == "g1f3" and env.state.moves[::2] == ["e2e4", "g1f3"] and len(env.state.moves) == 4
    board = chess.Board()
    for uci in env.state.moves:
        board.push_uci(uci)
    assert obs.fen == board.fen() == env.state.fen and env.state.moves_played == 2


def test_as_black_the_opponent_moves_first() -> None:
    obs = ChessEnvironment().reset(seed=4, agent_color="black", opponent="search")
    assert obs.agent_color == obs.turn == "black" and obs.opponent_last_move is not None
    assert obs.fen.split()[1] == "b" and not obs.done


def test_promotion_in_uci_and_san() -> None:
    for move in ("a7a8q", "a8=Q"):
        env = ChessEnvironment()
        env.reset(seed=0, fen="4k3/P7/8/8/8/8/8/4K3 w - - 0 1")
        obs = env.step(ChessAction(move=move))
        assert obs.last_move == "a7a8q" and obs.error is None


# -- rewards -------------------------------------------------------------------------------------
def test_checkmating_the_opponent_pays_plus_one() -> None:
    env = ChessEnvironment()
    env.reset(seed=0, fen=BACK_RANK)
    obs = env.step(ChessAction(move="Ra8"))
    assert (obs.reward, obs.done, obs.result, obs.termination) == (1.0, True, "1-0", "checkmate")
    assert obs.legal_moves == [] and obs.opponent_last_move is None and not obs.truncated


def test_being_checkmated_pays_minus_one() -> None:
    env = ChessEnvironment()
    env.reset(seed=0, fen=DOOMED_BLACK, agent_color="black", opponent="search", search_depth=1)
    obs = env.step(ChessAction(move="a6"))
    assert (obs.reward, obs.done, obs.result, obs.termination) == (-1.0, True, "1-0", "checkmate")
    assert obs.opponent_last_move == "b1b8" and obs.check


def test_a_draw_pays_zero_and_ends_the_game() -> None:
    env = ChessEnvironment()
    env.reset(seed=0, fen=STALEMATE_IN_ONE)
    obs = env.step(ChessAction(move="Qf7"))
    assert (obs.reward, obs.done, obs.result, obs.termination) == (0.0, True, "1/2-1/2", "stalemate")


def test_truncation_after_max_moves_pays_zero() -> None:
    env = ChessEnvironment()
    env.reset(seed=0, max_moves=2)
    first = env.step(ChessAction(move="d4"))
    last = env.step(ChessAction(move="c4"))
    assert not first.done and last.done and last.truncated and last.termination == "max_moves"
    assert last.reward == 0.0 and last.result == "*" and len(env.state.moves) == 4  # the opponent replied


def test_steps_after_the_end_are_refused_without_change() -> None:
    env = ChessEnvironment()
    env.reset(seed=0, fen=BACK_RANK)
    env.step(ChessAction(move="Ra8"))
    frozen = env.state.model_copy(deep=True)
    obs = env.step(ChessAction(move="g1f1"))
    assert obs.done and obs.reward == 0.0 and obs.error and "reset" in obs.error and env.state == frozen


# -- refused moves -------------------------------------------------------------------------------
@pytest.mark.parametrize(("fen", "move", "why"), [
    (None, "e2e5", "not a legal move for white"),
    (None, "Ke2", "not a legal move for white"),
    (None, "hello", "cannot read 'hello'"),
    (None, "", "no move given"),
    (None, "0000", "null move"),
    (None, "z9z9", "cannot read"),
    ("4k3/8/8/8/8/8/8/1N2KN2 w - - 0 1", "Nd2", "ambiguous"),
    ("4k3/P7/8/8/8/8/8/4K3 w - - 0 1", "a7a8", "must name the piece"),
])
def test_refused_moves_explain_and_leave_the_position_alone(fen: str | None, move: str, why: str) -> None:
    env = ChessEnvironment()
    first = env.reset(seed=0, fen=fen)
    before = env.state.model_copy(deep=True)
    obs = env.step(ChessAction(move=move))
    assert obs.error and why in obs.error and "legal moves include" in obs.error
    assert obs.error.split("include ")[1].split(",")[0] in first.legal_moves
    assert obs.reward == 0.0 and not obs.done
    assert obs.model_dump(exclude={"error"}) == first.model_dump(exclude={"error"})
    assert env.state == before.model_copy(update={"step_count": 1, "invalid_moves": 1})
    assert env.step(ChessAction(move=first.legal_moves[0])).error is None  # the game goes on


def test_start_positions_are_validated() -> None:
    env = ChessEnvironment()
    with pytest.raises(ValueError):
        env.reset(fen="not a fen")
    with pytest.raises(ValueError, match="not a legal position"):
        env.reset(fen="8/8/8/8/8/8/8/8 w - - 0 1")
    with pytest.raises(ValueError, match="already finished"):
        env.reset(fen="R5k1/5ppp/8/8/8/8/8/6K1 b - - 0 1")
    with pytest.raises(ValidationError):
        env.reset(opponent="stockfish")  # type: ignore[arg-type]


async def test_bad_actions_and_options_over_the_wire() -> None:
    async with serve_inloop(ChessEnvironment) as server:
        async with GenericEnvClient(server.url) as env:
            await env.reset(seed=2, episode_id="c", opponent="search")
            await env.step({"move": "e4"})
            before = await env.state()
            for bad in ({"move": 42}, {"move": ["e2e4"]}, {"move": "x" * 17}, {"uci": "e2e4"}):
                with pytest.raises(ServerError) as caught:
                    await env.step(bad)
                assert caught.value.code == "VALIDATION_ERROR", bad
            assert await env.state() == before
            for options, code in (({"opponent": "minimax"}, "VALIDATION_ERROR"), ({"agent_color": "red"}, "VALIDATION_ERROR"),
                                  ({"search_depth": 9}, "VALIDATION_ERROR"), ({"fen": "8/8 w"}, "EXECUTION_ERROR")):
                with pytest.raises(ServerError) as caught:
                    await env.reset(**options)
                assert caught.value.code == code, options
            assert await env.state() == before
            refused = await env.step({"move": "e4"})  # e4 is taken: a clear error observation, not a protocol error
            assert "not a legal move" in refused.observation["error"] and refused.done is False


# -- opponents and seeding -----------------------------------------------------------------------
def test_search_takes_free_material_and_finds_mate() -> None:
    board = chess.Board("4k3/8/8/8/3q4/8/8/R3K3 b - - 0 1")
    assert search_move(board, random.Random(0)).uci() == "d4a1"
    assert board.fen() == "4k3/8/8/8/3q4/8/8/R3K3 b - - 0 1"  # the search leaves the board as it was
    assert chess.Board(BACK_RANK).san(search_move(chess.Board(BACK_RANK), random.Random(3), depth=2)) == "Ra8#"
    assert random_move(chess.Board(), random.Random(0)) in chess.Board().legal_moves


@pytest.mark.parametrize("opponent", ["random", "search"])
def test_same_seed_same_game(opponent: str) -> None:
    games = []
    for seed in (7, 7, 8):
        env = ChessEnvironment()
        obs = env.reset(seed=seed, opponent=opponent, agent_color="black")  # type: ignore[arg-type]
        picker = random.Random(0)
        for _ in range(6):
            if obs.done:
                break
            obs = env.step(ChessAction(move=picker.choice(obs.legal_moves)))
        games.append(env.state.moves)
    assert games[0] == games[1]
    if opponent == "random":
        assert games[0] != games[2]


# -- real server ---------------------------------------------------------------------------------
async def test_search_and_random_agents_play_to_the_end_through_a_real_server() -> None:
    async with serve_process("chess") as (endpoint, _):
        async with GenericEnvClient(endpoint.base_url) as env:
            result = await env.reset(seed=5, opponent="search", max_moves=12, episode_id="sv")
            agent_rng = random.Random(5)
            while not result.done:
                move = search_move(chess.Board(result.observation["fen"]), agent_rng, depth=2)
                result = await env.step({"move": move.uci()})
                assert result.observation["error"] is None
            assert result.reward in (-1.0, 0.0, 1.0)
            state = await env.state()
            assert state["episode_id"] == "sv" and 1 <= state["moves_played"] <= 12
            assert state["done"] and (state["truncated"] or state["result"] != "*")

            result = await env.reset(seed=6, opponent="search", agent_color="black", max_moves=8)
            while not result.done:
                result = await env.step({"move": agent_rng.choice(result.observation["legal_moves"])})
            assert result.done and result.reward in (-1.0, 0.0, 1.0)

        async with OEGenericEnvClient(base_url=endpoint.base_url) as oe:
            first = await oe.reset(seed=3, opponent="search")
            assert first.observation["fen"] == chess.STARTING_FEN and first.done is False
            r = await oe.step({"move": "e4"})
            assert r.observation["last_move"] == "e2e4" and r.observation["opponent_last_move"]
            r = await oe.step({"move": "e2e4"})  # the pawn has moved: refused, as an observation
            assert "not a legal move" in r.observation["error"] and r.reward == 0.0
            state = await oe.state()
            assert state["step_count"] == 2 and state["invalid_moves"] == 1 and len(state["moves"]) == 2
