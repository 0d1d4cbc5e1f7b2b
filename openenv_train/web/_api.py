"""The viewer's JSON API over a :class:`TraceIndex`: pure ``(method, target) -> Asset``, no sockets.

Routes: ``/api/info``, ``/api/episodes?offset&limit&env&ok&min_reward&max_reward&group``,
``/api/episode/<id>`` (with its calls' graph), ``/api/curves``; everything else is a file of ``static/viewer``.
"""

from __future__ import annotations

import functools
import json
import math
from collections.abc import Callable
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, unquote, urlsplit

from ..core import OpenEnvTrainError
from ..http import Asset
from ._call_tree import call_tree
from ._static import read_static
from ._tokens import TokenTexts
from ._trace_index import EpisodeFilter, TraceIndex

__all__ = ["MAX_PAGE", "ViewerApi"]

MAX_PAGE = 500
_WIN_WINDOW = 16
#: What a run is judged by, shown first in this order: a series whose last name part matches one of these.
_FIRST_SERIES = ("reward", "win_rate", "win", "loss")
#: Keys of a metrics line that are not series: its wall-clock time and its phase.
_NOT_SERIES = ("step", "time", "phase")


class BadRequest(OpenEnvTrainError, ValueError):
    """A query parameter that cannot be used; the message names it and the expected form."""


def _json(payload: Any, status: int = 200) -> Asset:
    return Asset(json.dumps(payload, ensure_ascii=False, allow_nan=False).encode(), "application/json", status)


def _error(status: int, message: str) -> Asset:
    return _json({"detail": message}, status)


class ViewerApi:
    """Answers the viewer's requests for one trace source.

    Args:
        index: the trace source.
        env_class: an env name (catalog name or ``module:Class``) to its Environment class, whose
            ``render_observation`` draws each step's human view (the CLI passes the catalog's
            ``load_env_class``); None: no views, the observations show as JSON.
    """

    def __init__(self, index: TraceIndex, *, env_class: Callable[[str], Any] | None = None) -> None:
        self.index = index
        self.tokens = TokenTexts()
        self._view_of = functools.lru_cache(maxsize=64)(functools.partial(_view_of, env_class))

    def handle(self, method: str, target: str) -> Asset:
        """Route one request (``target`` = path and query)."""
        if method not in ("GET", "HEAD"):
            return _error(405, "Method Not Allowed: the viewer only serves GET")
        url = urlsplit(target)
        path = unquote(url.path)
        try:
            if path == "/api/info":
                return _json({"source": str(self.index.source), **self.index.facets(),
                              "metrics": self._metrics_path() is not None})
            if path == "/api/episodes":
                return _json(self.episodes(parse_qs(url.query)))
            if path.startswith("/api/episode/"):
                episode = self.episode(path[len("/api/episode/"):])
                return _json(episode) if episode is not None else _error(404, f"no episode with id {path[13:]!r}")
            if path == "/api/curves":
                return _json(self.curves())
        except BadRequest as exc:
            return _error(400, str(exc))
        if path.startswith("/api/"):
            return _error(404, f"no API route {path}; see /api/info, /api/episodes, /api/episode/<id>, /api/curves")
        asset = read_static("viewer", path.lstrip("/"))
        return asset if asset is not None else _error(404, f"not found: {path}")

    # -- the table -------------------------------------------------------------------------------
    def episodes(self, query: dict[str, list[str]]) -> dict[str, Any]:
        """One page of the episode table for the query's filters."""
        def one(name: str) -> str | None:
            values = query.get(name)
            return values[-1] if values and values[-1] != "" else None

        offset = _int(one("offset"), "offset", 0)
        limit = min(_int(one("limit"), "limit", 50), MAX_PAGE)
        if offset < 0 or limit < 1:
            raise BadRequest(f"offset must be >= 0 and limit >= 1, got offset={offset} limit={limit}")
        ok = one("ok")
        if ok not in (None, "true", "false"):
            raise BadRequest(f"ok must be true or false, got {ok!r}")
        flt = EpisodeFilter(env=one("env"), ok=None if ok is None else ok == "true",
                            min_reward=_float(one("min_reward"), "min_reward"),
                            max_reward=_float(one("max_reward"), "max_reward"), group=one("group"))
        return self.index.page(flt, offset, limit)

    # -- one episode -----------------------------------------------------------------------------
    def episode(self, trace_id: str) -> dict[str, Any] | None:
        """One row, ready to show: steps and turns decoded, completion tokens with text and logprobs, and the
        calls' graph (``call_graph``, see :func:`call_tree`; None for fewer than two calls)."""
        rec = self.index.record(trace_id)
        if rec is None:
            return None
        model = (rec.get("policy") or {}).get("model")
        view = self._view_of((rec.get("env") or {}).get("name"))
        steps = [{**s, "action": _loads(s.get("action")), "observation": _loads(s.get("observation")),
                  "reward": _finite(s.get("reward"))} for s in rec.get("steps") or []]
        for step in steps:
            step["view"] = _render(view, step["observation"])
        turns: list[dict[str, Any]] = []
        previous: list[Any] = []
        raw = rec.get("turns") or []
        for turn in raw:
            for key in ("request", "response", "metadata"):
                turn[key] = _loads(turn.get(key)) or {}
            messages = list(turn["request"].get("messages") or [])
            # a later call usually repeats the conversation so far (plus the reply): show only what is new
            new = messages[len(previous) + 1:] if previous and messages[:len(previous)] == previous else messages
            previous = messages
            texts, source = self.tokens.texts(turn, model)
            choices = [{k: v for k, v in c.items() if k != "logprobs"} for c in turn["response"].get("choices") or []]
            mask = list(turn.get("loss_mask") or [])
            n_prompt = len(turn.get("prompt_token_ids") or [])
            turns.append({
                "node_id": turn.get("node_id"), "messages": messages, "new_messages": new,
                "tools": turn["request"].get("tools") or [], "choices": choices, "metadata": turn["metadata"],
                "prompt_tokens": n_prompt,
                "completion": {"ids": list(turn.get("completion_token_ids") or []),
                               "logps": [_finite(x) for x in turn.get("per_token_logps") or []],
                               "mask": mask[n_prompt:], "texts": texts, "source": source},
            })
        graph = call_tree(raw)
        index = rec.pop("_index")
        # a scored dataset version (`openenv-train score`) keeps rubric components as reward_<name> columns
        rewards = dict(rec.get("rewards") or {}) if isinstance(rec.get("rewards"), dict) else {}
        rewards.update({k[7:]: _finite(v) for k, v in rec.items() if k.startswith("reward_") and _number(v)})
        rec["rewards"] = rewards
        return {**{k: v for k, v in rec.items() if k not in ("steps", "turns")}, "id": trace_id, "index": index,
                "reward": _finite(rec.get("reward")), "steps": steps, "turns": turns, "call_graph": graph}

    # -- curves ----------------------------------------------------------------------------------
    def _metrics_path(self) -> Path | None:
        source = self.index.source
        path = source / "metrics.jsonl" if source.is_dir() else None
        return path if path is not None and path.is_file() else None

    def curves(self) -> dict[str, Any]:
        """Series to plot: every numeric key of ``metrics.jsonl`` by step, else per-episode reward and win rate."""
        path = self._metrics_path()
        if path is not None:
            series: dict[str, list[list[float]]] = {}
            with path.open(encoding="utf-8") as f:
                for i, line in enumerate(f):
                    try:
                        point = json.loads(line)
                    except ValueError:
                        continue  # a torn last line of a run that is still writing
                    if not isinstance(point, dict):
                        continue
                    # lines with a phase (the recipes' logs) are series per phase, e.g. grpo_rollout/reward;
                    # such a line without a step (an evaluation) has no place on a step axis
                    phase = point.get("phase")
                    if phase is not None and "step" not in point:
                        continue
                    x = point.get("step", i)
                    prefix = f"{phase}/" if isinstance(phase, str) else ""
                    for key, value in point.items():
                        if key not in _NOT_SERIES and _number(value) and _number(x):
                            series.setdefault(prefix + key, []).append([x, value])
            names = sorted(series, key=_series_rank)
            return {"source": "metrics.jsonl", "x": "step",
                    "series": [_series(n, series[n]) for n in names]}
        rewards = self.index.rewards()
        points = [[i, r] for i, r in enumerate(rewards) if r is not None]
        wins: list[list[float]] = []
        recent: list[float] = []
        for i, r in enumerate(rewards):
            if r is None:
                continue
            recent = (recent + [1.0 if r >= 1.0 else 0.0])[-_WIN_WINDOW:]
            wins.append([i, sum(recent) / len(recent)])
        return {"source": "episodes", "x": "episode",
                "series": [_series("reward", points), _series(f"win_rate (reward >= 1, last {_WIN_WINDOW})", wins)]}


def _view_of(env_class: Callable[[str], Any] | None, env_name: Any) -> Any:
    """The ``render_observation`` of the env class a row names (a catalog name or ``module:Class``), or None."""
    if env_class is None or not isinstance(env_name, str) or not env_name or "://" in env_name:
        return None  # no lookup, no name, or a remote server's URL: no class here to ask
    try:
        return env_class(env_name).render_observation
    except Exception:  # an env this install does not have (or cannot import): no view, the JSON stays
        return None


def _render(view: Any, observation: Any) -> str | None:
    """The env's human view of one recorded observation; None when it has none or it fails."""
    if view is None or not isinstance(observation, dict):
        return None
    try:
        fragment = view(observation)
    except Exception:  # a view is optional: its bug must not hide the episode
        return None
    return fragment if isinstance(fragment, str) else None


def _series_rank(name: str) -> tuple[int, int, int, str]:
    """Reward, win rate and loss first (unphased, then rollout phases, then the others), then the rest by name."""
    phase, _, last = name.rpartition("/")
    for rank, key in enumerate(_FIRST_SERIES):
        if last == key or last.startswith(key + "_") or last.endswith("_" + key):
            return 0, 0 if not phase else 1 if "rollout" in phase else 2, rank, name
    return 1, 0, 0, name


def _series(name: str, points: list[list[float]]) -> dict[str, Any]:
    """One series; ``primary``: one a run is judged by; ``flat``: its value never changes (folded by the viewer)."""
    values = {p[1] for p in points}
    return {"name": name, "points": points, "primary": _series_rank(name)[0] == 0,
            "flat": len(values) <= 1 and len(points) > 1}


def _number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def _finite(value: Any) -> Any:
    return value if not isinstance(value, float) or math.isfinite(value) else None


def _loads(value: Any) -> Any:
    if not isinstance(value, str):
        return value
    try:
        return json.loads(value)
    except ValueError:
        return value


def _int(text: str | None, name: str, default: int) -> int:
    if text is None:
        return default
    try:
        return int(text)
    except ValueError:
        raise BadRequest(f"{name} must be an integer, got {text!r}") from None


def _float(text: str | None, name: str) -> float | None:
    if text is None:
        return None
    try:
        value = float(text)
    except ValueError:
        raise BadRequest(f"{name} must be a number, got {text!r}") from None
    if not math.isfinite(value):
        raise BadRequest(f"{name} must be finite, got {text!r}")
    return value
