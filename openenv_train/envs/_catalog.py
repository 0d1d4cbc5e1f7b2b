"""The catalog registry: names to lazy ``module:Class`` entry points, with close-match suggestions."""

from __future__ import annotations

import importlib
import importlib.util
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..core import EnvLoadError, did_you_mean
from ..server import AsgiApp, Environment, is_asgi_app, load_class
from ._pyspiel_table import GAMES as SPIEL_GAMES
from ._textarena_table import TEXTARENA_GAMES

__all__ = ["CATALOG", "EnvSpec", "get_spec", "is_env_folder", "list_envs", "load_env_class", "load_env_target", "register"]


@dataclass(frozen=True)
class EnvSpec:
    """A catalog entry: name, lazy entry point and a one-line description."""

    name: str
    entry_point: str
    description: str
    action: str = ""
    """The action's shape, e.g. ``{"message": str}``."""
    reward: str = ""
    """What the reward pays."""
    success_threshold: float = 1.0
    """The reward at or above which an episode is a success (a win, a solved task): pass@k's definition
    (``recipes.eval``); 1.0 is the catalog's win."""
    dependencies: tuple[str, ...] = field(default=())
    """Extra PyPI packages the env needs beyond the core install."""
    tags: tuple[str, ...] = field(default=())
    family: str = "other"
    """The group ``openenv-train catalog`` lists it under (games, board games, puzzles, finance, tools, ...)."""
    extra: str | None = None
    """The optional extra that installs ``dependencies`` (``pip install 'openenv-train[EXTRA]'``)."""
    modules: tuple[str, ...] = field(default=())
    """Import names the extra provides, checked before the entry point is imported."""

    @property
    def install(self) -> str:
        """The install line of the env's extra, or empty when the core install is enough."""
        return f"pip install 'openenv-train[{self.extra}]'" if self.extra else ""

    def load(self) -> type[Environment[Any, Any, Any]]:
        """Import the entry point's class.

        Raises:
            EnvLoadError: the env's extra is not installed (the message gives the install line).
        """
        missing = [m for m in self.modules if importlib.util.find_spec(m) is None]
        if missing:
            raise EnvLoadError(
                f"the {self.name!r} env needs {', '.join(missing)}, which is not installed: {self.install}"
            )
        return load_class(self.entry_point)


CATALOG: dict[str, EnvSpec] = {}


def register(spec: EnvSpec) -> EnvSpec:
    """Add an env to the catalog; a name can be registered once."""
    if spec.name in CATALOG and CATALOG[spec.name] != spec:
        raise ValueError(f"env name {spec.name!r} is already registered to {CATALOG[spec.name].entry_point}")
    CATALOG[spec.name] = spec
    return spec


def list_envs() -> list[EnvSpec]:
    """Every catalog entry, sorted by name."""
    return [CATALOG[name] for name in sorted(CATALOG)]


def get_spec(name: str) -> EnvSpec:
    """The catalog entry of ``name``.

    Raises:
        EnvLoadError: no such env; the message suggests close matches.
    """
    spec = CATALOG.get(name)
    if spec is None:
        hint = did_you_mean(name, CATALOG, otherwise=".")
        raise EnvLoadError(
            f"no env named {name!r} in the catalog{hint} Known: {', '.join(sorted(CATALOG))}. "
            "Pass 'package.module:ClassName' to serve your own."
        )
    return spec


def is_env_folder(name_or_path: str) -> bool:
    """Whether ``name_or_path`` names an env folder (``openenv.yaml``) rather than a catalog env."""
    path = Path(name_or_path)
    looks_like_path = name_or_path.startswith((".", "/", "~")) or os.sep in name_or_path or name_or_path not in CATALOG
    return ":" not in name_or_path and looks_like_path and (path.expanduser() / "openenv.yaml").is_file()


def load_env_class(name_or_path: str) -> type[Environment[Any, Any, Any]]:
    """A catalog name (``echo``), a ``module:Class`` path or an env folder (``openenv.yaml``) to its Environment class."""
    if is_env_folder(name_or_path):
        from ._openenv import load_env_folder

        return load_env_folder(Path(name_or_path).expanduser())
    if ":" in name_or_path:
        return load_class(name_or_path)
    return get_spec(name_or_path).load()


def load_env_target(name_or_path: str) -> type[Environment[Any, Any, Any]] | AsgiApp:
    """As :func:`load_env_class`, but an env's own ASGI app (routes of its own) is given as an
    :class:`~openenv_train.server.AsgiApp`, to be served as it is (``openenv-train serve``, the providers): the app of
    an env folder that is neither our Environment nor an OpenEnv ``create_app`` app, or a ``module:attr`` naming an
    ``AsgiApp`` or an ASGI app (a FastAPI app)."""
    if is_env_folder(name_or_path):
        from ._openenv import load_env_folder_target

        return load_env_folder_target(Path(name_or_path).expanduser())
    if ":" not in name_or_path:
        return load_env_class(name_or_path)
    try:
        return load_class(name_or_path)
    except EnvLoadError as exc:
        found = _attribute(name_or_path)
        if isinstance(found, AsgiApp):
            return found
        if is_asgi_app(found):
            return AsgiApp(found, name=name_or_path.partition(":")[2], source=name_or_path)
        raise exc from None


def _attribute(path: str) -> Any:
    """The object ``module:attr`` names, None when it does not import (load_class said why)."""
    module_name, _, attr = path.partition(":")
    try:
        obj: Any = importlib.import_module(module_name)
        for part in attr.split("."):
            obj = getattr(obj, part)
    except Exception:
        return None
    return obj


register(EnvSpec(
    "echo", "openenv_train.envs.echo:EchoEnvironment", "MCP tools that echo a message (OpenEnv's echo_env).",
    action='{"type": "call_tool", "tool_name": "echo_message"|"echo_with_length", "arguments": {"message": str}}',
    reward="none (0.0 on reset, null on steps)", family="test",
    tags=("mcp", "test"),
))
register(EnvSpec(
    "counter", "openenv_train.envs.counter:CounterEnvironment",
    "Add to a counter until it reaches a target; a tiny typed env.",
    action='{"delta": int}', reward="1.0 for landing exactly on the target, else 0.0", family="test",
    tags=("test",),
))

# -- wordle ----------------------------------------------------------------------------------------------
register(EnvSpec(
    "wordle", "openenv_train.envs.wordle:WordleEnvironment",
    "Guess a secret 5-letter word in six tries from G/Y/X letter feedback (OpenEnv's TextArena Wordle-v0).",
    action='{"message": str} (the guess as "[crane]")',
    reward="1.0 for a win; out of guesses or a second invalid move in a row: (greens + 0.5*yellows)/5 "
           "of the last valid guess; 0.0 before the end",
    family="puzzles",
    tags=("game", "text", "textarena"),
))
# -- coding and repl (sandboxed) -------------------------------------------------------------------------
register(EnvSpec(
    "coding", "openenv_train.envs.coding:CodingEnvironment",
    "Write a Python function in the OS sandbox; a submit runs hidden unit tests.",
    action='{"code": str, "submit": bool}', reward="fraction of hidden tests passed on submit, else 0.0",
    family="coding",
    tags=("code", "sandbox"),
))
register(EnvSpec(
    "repl", "openenv_train.envs.repl:ReplEnvironment",
    "Answer a question with a persistent Python session in the OS sandbox; FINAL(answer) ends it.",
    action='{"code": str}', reward="1.0 for a FINAL answer that matches, else 0.0",
    dependencies=("cloudpickle>=3.0,<4",), family="coding",
    tags=("code", "sandbox", "rlm"),
))
register(EnvSpec(
    "git", "openenv_train.envs.git_repo:GitEnvironment",
    "A task on a real git repository in the OS sandbox (commit, branch, merge conflicts, revert, tag); a submit "
    "checks the repository's state.",
    action='{"command": str, "submit": bool}', reward="fraction of the task's repository checks that hold on submit, "
    "else 0.0", family="coding",
    tags=("code", "sandbox", "git"),
))
register(EnvSpec(
    "terminal", "openenv_train.envs.terminal:TerminalEnvironment",
    "A terminal-bench style task in a tmux terminal in the OS sandbox: keystrokes in, the screen out; a script "
    "checks the task (OpenEnv's terminus/tbench2 kind).",
    action='{"keystrokes": str, "keys": [str], "wait_s": float, "submit": bool}',
    reward="1.0 when the task's check script passes on submit (or at max_steps), else 0.0", family="coding",
    tags=("code", "sandbox", "terminal"),
))
register(EnvSpec(
    "jupyter", "openenv_train.envs.jupyter:JupyterEnvironment",
    "Answer a question with a real Jupyter kernel (ipykernel) per session in the OS sandbox, its channels over "
    "ZeroMQ IPC; cells, outputs, errors, a time limit per cell.",
    action='{"code": str, "answer": str | null}', reward="1.0 for a matching answer, else 0.0",
    dependencies=("jupyter-client==8.10.0", "ipykernel==7.4.0"), family="coding", extra="jupyter",
    modules=("jupyter_client", "ipykernel"), tags=("code", "sandbox", "jupyter"),
))
# -- OpenSpiel-compatible games --------------------------------------------------------------------------
register(EnvSpec(
    "tic_tac_toe", "openenv_train.envs.python_games:TicTacToeEnvironment",
    "Tic-tac-toe against a random, fixed or heuristic opponent (OpenSpiel's tic_tac_toe, pure Python).",
    action='{"action_id": int}  (cell 0..8 = row*3+col)', reward="1 win, -1 loss, 0 draw on the final step",
    family="board games",
    tags=("openspiel", "game", "two-player"),
))
register(EnvSpec(
    "connect4", "openenv_train.envs.python_games:ConnectFourEnvironment",
    "Connect four against a random, fixed or heuristic opponent (OpenSpiel's connect_four, pure Python).",
    action='{"action_id": int}  (column 0..6)', reward="1 win, -1 loss, 0 draw on the final step",
    family="board games",
    tags=("openspiel", "game", "two-player"),
))
register(EnvSpec(
    "catch", "openenv_train.envs.python_games:CatchEnvironment",
    "Move a paddle to catch a falling ball (OpenSpiel's catch, pure Python).",
    action='{"action_id": int}  (0 left, 1 stay, 2 right)', reward="1 caught, -1 missed on the final step",
    family="games",
    tags=("openspiel", "game", "single-player"),
))
register(EnvSpec(
    "blackjack", "openenv_train.envs.python_games:BlackjackEnvironment",
    "Blackjack against OpenSpiel's fixed dealer (OpenSpiel's blackjack, pure Python).",
    action='{"action_id": int}  (0 hit, 1 stand)', reward="1 win, -1 loss, 0 push on the final step",
    family="card games",
    tags=("openspiel", "game", "single-player", "stochastic"),
))
register(EnvSpec(
    "2048", "openenv_train.envs.python_games:TwentyFortyEightEnvironment",
    "The 2048 sliding-tile game with seeded tile spawns (OpenSpiel's 2048, pure Python).",
    action='{"action_id": int}  (0 up, 1 right, 2 down, 3 left)', reward="points of the tiles merged by each move",
    family="puzzles",
    tags=("openspiel", "game", "single-player", "stochastic"),
))
register(EnvSpec(
    "kuhn_poker", "openenv_train.envs.python_games:KuhnPokerEnvironment",
    "Two-player Kuhn poker against a random, fixed or heuristic opponent (OpenSpiel's kuhn_poker, pure Python).",
    action='{"action_id": int}  (0 pass/fold, 1 bet/call)', reward="chips won or lost (+-1 or +-2) on the final step",
    family="card games",
    tags=("openspiel", "game", "two-player", "imperfect-information"),
))
register(EnvSpec(
    "atari", "openenv_train.envs.atari:AtariEnvironment",
    "An Atari 2600 game (pong by default; 108 ROMs) through ale-py: action ids, RGB, grayscale or RAM observations, "
    "frame skip, sticky actions; frames as PNGs (OpenEnv's atari_env).",
    action='{"action_id": int} (one of legal_actions; action_meanings says what each is)',
    reward="the game's score change over the step",
    dependencies=("ale-py==0.12.1",), family="games", extra="atari", modules=("ale_py",),
    tags=("game", "atari", "pixels", "single-player"),
))
# -- chess and grid worlds -------------------------------------------------------------------------------
register(EnvSpec(
    "chess", "openenv_train.envs.chess:ChessEnvironment",
    "Chess against a seeded random or shallow alpha-beta opponent (python-chess).",
    action='{"move": str} in UCI ("e2e4") or SAN ("Nf3")',
    reward="+1 win, -1 loss, 0 draw at the end of the game; 0.0 otherwise",
    dependencies=("chess>=1.10,<2",), family="board games",
    tags=("game", "board-game", "two-player"),
))
register(EnvSpec(
    "maze", "openenv_train.envs.gridworlds:MazeEnvironment",
    "A seeded perfect maze: walk from the top-left cell to the exit; walls block moves.",
    action='{"direction": "up"|"down"|"left"|"right"} or {"action_id": 0-3}',
    reward="1.0 on reaching the exit; -step_penalty (default 0) per other step", family="grid worlds",
    tags=("game", "grid"),
))
register(EnvSpec(
    "grid_world", "openenv_train.envs.gridworlds:GridWorldEnvironment",
    "The classic gridworld: reach the goal, avoid pits; seeded layouts and optional slippery moves.",
    action='{"direction": "up"|"down"|"left"|"right"} or {"action_id": 0-3}',
    reward="+1 goal, -1 pit (both end it); -step_cost (default 0.01) per other step", family="grid worlds",
    tags=("game", "grid"),
))
register(EnvSpec(
    "snake", "openenv_train.envs.gridworlds:SnakeEnvironment",
    "Snake on a square board: eat seeded food to grow; the edge or your own body kills you.",
    action='{"direction": "up"|"down"|"left"|"right"} or {"action_id": 0-3}; {} keeps the heading',
    reward="+1 per food eaten, -1 on death, 0.0 otherwise", family="grid worlds",
    tags=("game", "grid"),
))
# -- control and simulation --------------------------------------------------------------------------------
register(EnvSpec(
    "dm_control", "openenv_train.envs.mujoco_control:DMControlEnvironment",
    "MuJoCo continuous control through dm_control's suite (cartpole, reacher, walker, cheetah, humanoid, ...): "
    "one value per actuator with its bounds checked, seeded starts, state or rendered pixel observations "
    "(OpenEnv's dm_control_env).",
    action='{"values": [float, ...]} (one per actuator, within action_spec\'s bounds)',
    reward="the task's own, in [0, 1] per step",
    dependencies=("dm-control==1.0.50", "mujoco==3.17.0"), family="control", extra="mujoco",
    modules=("dm_control", "mujoco"), tags=("control", "mujoco", "continuous", "physics", "single-player"),
))
register(EnvSpec(
    "traffic", "openenv_train.envs.traffic:TrafficEnvironment",
    "Traffic-signal control of one intersection in SUMO (libsumo, a process per session): green phases as "
    "actions, sumo-rl's observation (phase, lane densities and queues) and rewards (OpenEnv's sumo_rl_env).",
    action='{"phase_id": int, "ts_id": "0"} (one of action_mask)',
    reward="the drop in the vehicles' accumulated waiting time (sumo-rl's diff-waiting-time; or average-speed, "
           "queue, pressure)",
    dependencies=("eclipse-sumo==1.28.0", "libsumo==1.28.0"), family="control", extra="traffic",
    modules=("sumo", "libsumo"), tags=("control", "traffic", "sumo", "simulation", "single-player"),
))
# -- reasoning_gym and sql_tools -------------------------------------------------------------------------
register(EnvSpec(
    "reasoning_gym", "openenv_train.envs.reasoning_gym:ReasoningGymEnvironment",
    "One procedurally generated question from a reasoning-gym dataset; one answer, scored by its score_answer.",
    action='{"answer": str}', reward="the dataset's score_answer in [0, 1] for the one answer (1.0 = correct)",
    dependencies=("reasoning-gym>=0.1.25,<0.2",), family="reasoning", extra="reasoning-gym", modules=("reasoning_gym",),
    tags=("reasoning", "single-turn"),
))
register(EnvSpec(
    "sql_tools", "openenv_train.envs.sql_tools:SQLToolsEnvironment",
    "Answer a question about a small shop database (SQLite) with read-only SQL tools, then submit the answer.",
    action='{"type": "call_tool", "tool_name": "get_question"|"list_tables"|"describe_table"|"query"|"submit_answer", '
           '"arguments": {...}}',
    reward="1.0 for a correct submit_answer (numbers within 1e-4 relative), else 0.0; submit ends the episode",
    family="tools",
    tags=("mcp", "sql", "tool-use"),
))
# -- finance -------------------------------------------------------------------------------------------
register(EnvSpec(
    "trading", "openenv_train.envs.trading:TradingEnvironment",
    "Trade seeded synthetic markets (GBM with regimes and jumps) one bar a step, with fees and slippage.",
    action='{"side": "buy"|"sell"|"hold", "size": float} or {"target_position": float} or '
           '{"actions": [float in -1..1 per asset]} (OpenEnv finrl_env)',
    reward="change in log equity over the bar, net of costs; the end reports return vs buy-and-hold, Sharpe, "
           "max drawdown", family="finance", tags=("finance", "stochastic"),
))
register(EnvSpec(
    "trading_mcp", "openenv_train.envs.trading:TradingMCPEnvironment",
    "The trading simulator as MCP tools: get_quote, get_history, place_order, get_portfolio, advance.",
    action='{"type": "call_tool", "tool_name": "get_quote"|"get_history"|"place_order"|"get_portfolio"|"advance", '
           '"arguments": {...}}',
    reward="advance pays the change in log equity over the bars it moved; other tools null",
    family="finance", tags=("mcp", "finance", "tool-use"),
))
# -- OpenSpiel through pyspiel (the [openspiel] extra) ---------------------------------------------------
_SPIEL_FAMILY = {"liars_dice": "card games", "leduc_poker": "card games", "goofspiel": "card games",
                 "battleship": "games"}


def _spiel_class(key: str) -> str:
    return "Spiel" + "".join(word.capitalize() for word in key.split("_")) + "Environment"


for _game in SPIEL_GAMES.values():
    register(EnvSpec(
        f"openspiel/{_game.key}", f"openenv_train.envs.pyspiel_games:{_spiel_class(_game.key)}",
        f"{_game.blurb} (OpenSpiel's {_game.name} through pyspiel; random or MCTS opponent.)",
        action='{"action_id": int} (one of legal_actions; legal_action_names says what each is)',
        reward="the agent's pyspiel reward after its move and the replies (the game's return at the end)",
        dependencies=("open_spiel==2.0.2",), family=_SPIEL_FAMILY.get(_game.key, "board games"),
        extra="openspiel", modules=("pyspiel",), tags=("openspiel", "pyspiel", "game", "two-player"),
    ))
# -- TextArena (the [textarena] extra) -----------------------------------------------------------------
for _ta in TEXTARENA_GAMES.values():
    register(EnvSpec(
        f"textarena/{_ta.key}",
        "openenv_train.envs.textarena_games:TextArena"
        + "".join(word.capitalize() for word in _ta.key.split("_")) + "Environment",
        f"{_ta.blurb} (TextArena's {_ta.env_id}.)",
        action='{"message": str} (the move in the game\'s bracket format)',
        reward="TextArena's reward when the game ends (1.0 solved); 0.0 before",
        dependencies=("textarena==0.7.4",), family=_ta.family, extra="textarena", modules=("textarena",),
        tags=("textarena", "text", "puzzle", "single-player"),
    ))
# -- tool envs over MCP ----------------------------------------------------------------------------------
register(EnvSpec(
    "calendar", "openenv_train.envs.calendar_tools:CalendarEnvironment",
    "Carry out a calendar or todo request (schedule, move, cancel, complete, add) with tools over SQLite.",
    action='{"type": "call_tool", "tool_name": "list_events"|"find_free_slots"|"create_event"|"move_event"|'
           '"delete_event"|"list_todos"|"add_todo"|"complete_todo"|"submit"|..., "arguments": {...}}',
    reward="1.0 when submit finds the store meets the request, else 0.0; submit ends the episode",
    family="tools", tags=("mcp", "tool-use", "sqlite"),
))
register(EnvSpec(
    "mock_apis", "openenv_train.envs.mock_apis:MockAPIEnvironment",
    "Answer a request by calling mock APIs (weather, currency, stocks, flights, messages), BFCL-style.",
    action='{"type": "call_tool", "tool_name": "get_weather"|"convert_currency"|"get_stock_price"|'
           '"search_flights"|"book_flight"|"send_message"|"submit_answer"|..., "arguments": {...}}',
    reward="on submit_answer: share of the needed calls made with matching arguments, plus the answer",
    family="tools", tags=("mcp", "tool-use", "function-calling"),
))
register(EnvSpec(
    "doc_search", "openenv_train.envs.doc_search:DocSearchEnvironment",
    "Answer a question by searching a local corpus (the Python standard library's docstrings) with BM25 search "
    "and fetch tools; OpenEnv's websearch kind, offline.",
    action='{"type": "call_tool", "tool_name": "search"|"fetch"|"submit_answer", "arguments": {...}}',
    reward="1.0 for a correct submit_answer (normalised exact match), else 0.0; submit ends the episode",
    family="tools", tags=("mcp", "tool-use", "search"),
))
# -- browser navigation (MiniWoB++ in headless Chromium) -------------------------------------------------
_BROWSER_ACTION = ('{"action_str": str}  (BrowserGym actions: click(\'13\'), fill(\'7\', \'text\'), '
                   'select_option(bid, opt), press(bid, key), check/uncheck(bid), scroll(dx, dy), noop())')
_BROWSER_REWARD = "MiniWoB's raw reward when the task ends (1.0 success, -1.0 failure, partial on some), else 0.0"
_BROWSER_DEPS = ("miniwob>=1.1,<2", "selenium>=4.20", "Debian chromium + chromium-driver")
register(EnvSpec(
    "browser", "openenv_train.envs.browser:BrowserEnvironment",
    "A MiniWoB++ web task (drawn by seed from the 17 below) in a real headless Chromium; wire-compatible with "
    "OpenEnv's browsergym_env.",
    action=_BROWSER_ACTION, reward=_BROWSER_REWARD, dependencies=_BROWSER_DEPS, family="browser", extra="browser",
    modules=("miniwob", "selenium"), tags=("browser", "web", "miniwob"),
))
for _task in ("click-button", "click-button-sequence", "click-checkboxes", "click-link", "click-option", "click-tab",
              "click-dialog", "click-collapsible", "enter-text", "enter-text-2", "enter-password", "login-user",
              "choose-list", "focus-text", "focus-text-2", "navigate-tree", "use-autocomplete"):
    _cls = "".join(part.capitalize() for part in _task.split("-")) + "BrowserEnvironment"
    register(EnvSpec(
        f"browser/{_task}", f"openenv_train.envs.browser:{_cls}",
        f"The MiniWoB++ task {_task} in a real headless Chromium (the browser env with this task).",
        action=_BROWSER_ACTION, reward=_BROWSER_REWARD, dependencies=_BROWSER_DEPS, family="browser",
        extra="browser", modules=("miniwob", "selenium"), tags=("browser", "web", "miniwob"),
    ))
