"""The /web routes of the env server without a browser: files, redirect, info, refusals, and web=False."""

from __future__ import annotations

import asyncio
import json
import urllib.error
import urllib.request

from openenv_train.envs.echo import EchoEnvironment
from openenv_train.envs.wordle import WordleEnvironment
from openenv_train.server import EnvServer, ServerConfig


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args: object, **kwargs: object) -> None:
        return None


def _fetch(url: str, method: str = "GET") -> tuple[int, dict[str, str], bytes]:
    opener = urllib.request.build_opener(_NoRedirect)
    try:
        with opener.open(urllib.request.Request(url, method=method), timeout=10) as reply:
            return reply.status, dict(reply.headers), reply.read()
    except urllib.error.HTTPError as exc:
        return exc.code, dict(exc.headers), exc.read()


async def _get(url: str, method: str = "GET") -> tuple[int, dict[str, str], bytes]:
    return await asyncio.to_thread(_fetch, url, method)


async def test_web_routes() -> None:
    async with EnvServer(WordleEnvironment, ServerConfig(port=0, web=True)) as server:
        status, headers, body = await _get(f"{server.url}/web")
        assert status == 308 and headers["location"] == "web/" and body == b""
        status, headers, body = await _get(f"{server.url}/web/")
        assert status == 200 and headers["content-type"] == "text/html; charset=utf-8"
        assert int(headers["content-length"]) == len(body) and b"playground.js" in body
        for name, kind in (("playground.js", "text/javascript"), ("playground.css", "text/css")):
            status, headers, body = await _get(f"{server.url}/web/{name}")
            assert status == 200 and headers["content-type"].startswith(kind) and len(body) > 500
        status, _, body = await _get(f"{server.url}/web/info.json")
        assert json.loads(body) == {"name": "wordle", "description": WordleEnvironment.metadata_info().description,
                                    "version": WordleEnvironment.version, "mcp": False,
                                    "hidden_state": ["secret"]}
        assert (await _get(f"{server.url}/web/missing.js"))[0] == 404
        assert (await _get(f"{server.url}/web/%2e%2e/_static.py"))[0] == 404
        assert (await _get(f"{server.url}/web/../web/_static.py"))[0] == 404
        assert (await _get(f"{server.url}/web/", "POST"))[0] == 405
        status, headers, body = await _get(f"{server.url}/web/", "HEAD")
        assert status == 200 and body == b""
        # the protocol's routes are unchanged on the same keep-alive server
        assert json.loads((await _get(f"{server.url}/health"))[2]) == {"status": "healthy"}
        assert (await _get(f"{server.url}/webhook"))[0] == 404


async def test_mcp_env_info_and_web_off_by_default() -> None:
    async with EnvServer(EchoEnvironment, ServerConfig(port=0, web=True)) as server:
        info = json.loads((await _get(f"{server.url}/web/info.json"))[2])
        assert info["mcp"] is True and info["hidden_state"] == []
    async with EnvServer(EchoEnvironment, ServerConfig(port=0)) as server:
        status, headers, body = await _get(f"{server.url}/web/")
        assert status == 404 and headers["content-type"] == "application/json"


async def test_render_route_gives_the_envs_human_view_of_an_observation() -> None:
    from urllib.parse import quote

    observation = {"guesses": ["slate", "crane"], "feedback": ["XXGXG", "GGGGG"], "remaining_guesses": 4}
    async with EnvServer(WordleEnvironment, ServerConfig(port=0, web=True)) as server:
        status, _, body = await _get(f"{server.url}/web/render?observation={quote(json.dumps(observation))}")
        assert status == 200
        fragment = json.loads(body)["html"]
        assert fragment == WordleEnvironment.render_observation(observation)
        assert fragment.count('class="guess"') == 2 and fragment.count('class="guess empty"') == 4
        assert fragment.count('data-mark="G"') == 7 and 'data-guess="crane"' in fragment
        status, _, body = await _get(f"{server.url}/web/render?observation=%7Bnot-json")
        assert status == 400 and "not valid JSON" in json.loads(body)["detail"]
        status, _, body = await _get(f"{server.url}/web/render")
        assert status == 400 and "observation=<JSON object>" in json.loads(body)["detail"]
    async with EnvServer(EchoEnvironment, ServerConfig(port=0, web=True)) as server:  # no view: null
        status, _, body = await _get(f"{server.url}/web/render?observation=%7B%7D")
        assert status == 200 and json.loads(body) == {"html": None}


def test_human_views_escape_what_they_show() -> None:
    from openenv_train.envs.chess import ChessEnvironment
    from openenv_train.server import Environment

    assert Environment.render_observation({"anything": 1}) is None  # the base: no view
    hostile = WordleEnvironment.render_observation({"guesses": ["<img src=x onerror=alert(1)>"], "feedback": ["GG"]})
    assert hostile is not None and "<img" not in hostile and "&lt;" in hostile
    board = ChessEnvironment.render_observation(ChessEnvironment().reset().model_dump())
    assert board is not None and board.count("<td") == 64 and "♔" in board and "♚" in board
    assert ChessEnvironment.render_observation({"fen": "<script>"}) is None
