"""The viewer's JSON API without a browser: paging, filters, episodes, token text, curves, HTTP."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from pathlib import Path
from types import ModuleType
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from openenv_train.cli._app import main as cli_main
from openenv_train.trace import EnvInfo, PolicyInfo, TraceRow, TraceWriter, TrainingTrace, build_turn
from openenv_train.web import TraceIndex, ViewerApi, ViewerServer
from openenv_train.web._api import MAX_PAGE
from openenv_train.web._call_tree import call_tree
from openenv_train.web._trace_index import SourceError


def _get(api: ViewerApi, target: str) -> tuple[int, Any]:
    asset = api.handle("GET", target)
    return asset.status, json.loads(asset.body) if asset.content_type == "application/json" else asset.body


def _ids(api: ViewerApi, query: str) -> list[str]:
    status, page = _get(api, f"/api/episodes?{query}")
    assert status == 200, page
    return [e["episode_id"] for e in page["episodes"]]


def test_paging(run_dir: Path) -> None:
    api = ViewerApi(TraceIndex(run_dir))
    status, page = _get(api, "/api/episodes?offset=5&limit=4")
    assert status == 200 and page["total"] == 12 and page["offset"] == 5 and page["limit"] == 4
    assert [e["episode_id"] for e in page["episodes"]] == ["ep5", "ep6", "ep7", "ep8"]
    assert [e["index"] for e in page["episodes"]] == [5, 6, 7, 8]
    assert _ids(api, "offset=10&limit=50") == ["ep10", "ep11"]
    assert _ids(api, "offset=40") == []
    assert _get(api, "/api/episodes?limit=100000")[1]["limit"] == MAX_PAGE
    entry = _get(api, "/api/episodes?limit=1")[1]["episodes"][0]
    assert entry["env"] == "wordle" and entry["group_id"] == "g0" and entry["model"] == "tiny-test-model"
    assert not any(k.startswith("_") for k in entry)


@pytest.mark.parametrize(("query", "expected"), [
    ("env=echo", ["ep1", "ep5", "ep9"]),
    ("ok=false", ["ep3"]),
    ("ok=true&env=echo", ["ep1", "ep5", "ep9"]),
    ("min_reward=0.5", ["ep6", "ep7", "ep8", "ep9", "ep10", "ep11"]),
    ("max_reward=0.1", ["ep0", "ep1"]),  # ep3 was never scored: a reward bound leaves it out
    ("min_reward=0.5&max_reward=0.9&group=g3", ["ep6", "ep7"]),
    ("group=g1", ["ep2", "ep3"]),
    ("env=&ok=&group=", [f"ep{i}" for i in range(12)]),  # empty values mean no filter
    ("env=nope", []),
])
def test_filters(run_dir: Path, query: str, expected: list[str]) -> None:
    api = ViewerApi(TraceIndex(run_dir))
    assert _ids(api, query) == expected
    assert _get(api, f"/api/episodes?{query}")[1]["total"] == len(expected)


@pytest.mark.parametrize(("query", "word"), [
    ("ok=maybe", "ok"), ("min_reward=high", "min_reward"), ("limit=ten", "limit"), ("offset=-1", "offset"),
    ("max_reward=nan", "max_reward"),
])
def test_bad_parameters_are_400_naming_them(run_dir: Path, query: str, word: str) -> None:
    status, body = _get(ViewerApi(TraceIndex(run_dir)), f"/api/episodes?{query}")
    assert status == 400 and word in body["detail"]


def test_episode(run_dir: Path, runs: ModuleType) -> None:
    api = ViewerApi(TraceIndex(run_dir))
    info = _get(api, "/api/info")[1]
    assert info["rows"] == 12 and info["envs"] == ["echo", "wordle"] and info["metrics"] is True
    eid = _get(api, "/api/episodes?offset=4&limit=1")[1]["episodes"][0]["id"]
    status, ep = _get(api, f"/api/episode/{eid}")
    assert status == 200 and ep["episode_id"] == "ep4" and ep["index"] == 4 and ep["reward"] == 0.364
    assert ep["rewards"] == {"wordle.greens": 0.2, "wordle.correct": 0.364} and ep["task"] == {"seed": 4}
    assert [s["reward"] for s in ep["steps"]] == [0.0, 0.1] and ep["steps"][0]["action"] == {"message": "[crane]"}
    first, second = ep["turns"]
    assert [m["role"] for m in first["new_messages"]] == ["system", "user"]
    # the second call repeats the conversation so far; only what is new is shown for it
    assert [m["content"] for m in second["new_messages"]] == ["Game 4, guess 2"]
    assert first["choices"][0]["message"]["content"] == "[crane]" and first["prompt_tokens"] == 8
    completion = first["completion"]
    assert completion["texts"] == [t for t, _ in runs.TOKENS] and completion["source"] == "row"
    assert completion["logps"] == [lp for _, lp in runs.TOKENS] and completion["mask"] == [1, 1, 1, 1]
    eid5 = _get(api, "/api/episodes?offset=5&limit=1")[1]["episodes"][0]["id"]
    completion = _get(api, f"/api/episode/{eid5}")[1]["turns"][0]["completion"]
    assert completion["texts"] is None and completion["source"] == "ids" and len(completion["ids"]) == 4
    status, body = _get(api, "/api/episode/nope")
    assert status == 404 and "nope" in body["detail"]


def test_index_reads_only_light_columns_and_one_row_group(run_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[tuple[str, Any]] = []
    read, read_group = pq.ParquetFile.read, pq.ParquetFile.read_row_group

    def spy_read(self: Any, columns: Any = None, **kw: Any) -> Any:
        calls.append(("read", columns))
        return read(self, columns=columns, **kw)

    def spy_group(self: Any, i: int, *a: Any, **kw: Any) -> Any:
        calls.append(("row_group", i))
        return read_group(self, i, *a, **kw)

    monkeypatch.setattr(pq.ParquetFile, "read", spy_read)
    monkeypatch.setattr(pq.ParquetFile, "read_row_group", spy_group)
    api = ViewerApi(TraceIndex(run_dir))
    assert len(calls) == 3 and all(kind == "read" and "turns" not in cols and "steps" not in cols for kind, cols in calls)
    calls.clear()
    _get(api, "/api/episodes?limit=500")
    assert calls == []  # paging reads nothing once indexed
    eid = _get(api, "/api/episodes?offset=7&limit=1")[1]["episodes"][0]["id"]
    assert _get(api, f"/api/episode/{eid}")[1]["episode_id"] == "ep7"
    assert calls == [("row_group", 0)]


def test_shards_written_later_are_picked_up(run_dir: Path, runs: ModuleType) -> None:
    api = ViewerApi(TraceIndex(run_dir))
    with TraceWriter(run_dir, resume=True, flush_rows=1) as writer:
        writer.write(runs.make_row(20, env="chess"))
    page = _get(api, "/api/episodes?env=chess")[1]
    assert page["total"] == 1 and page["episodes"][0]["episode_id"] == "ep20"
    assert _get(api, "/api/info")[1]["rows"] == 13


def test_curves_from_metrics_and_from_episodes(run_dir: Path) -> None:
    curves = _get(ViewerApi(TraceIndex(run_dir)), "/api/curves")[1]
    assert curves["source"] == "metrics.jsonl" and curves["x"] == "step"
    # what a run is judged by first, then the rest by name; a series that never changes is marked flat
    assert [s["name"] for s in curves["series"]] == ["reward", "win_rate", "loss", "clip_ratio", "lr"]
    assert [(s["primary"], s["flat"]) for s in curves["series"]] == [(True, False)] * 3 + [(False, True), (False, False)]
    assert curves["series"][0]["points"][:2] == [[0, 0.0], [1, 0.1]] and len(curves["series"][0]["points"]) == 8
    (run_dir / "metrics.jsonl").unlink()
    curves = _get(ViewerApi(TraceIndex(run_dir)), "/api/curves")[1]
    assert curves["source"] == "episodes"
    reward, win = curves["series"]
    assert [x for x, _ in reward["points"]] == [i for i in range(12) if i != 3]  # the unscored row has no point
    assert win["points"][-1] == [11, 1 / 11]  # only ep11 (reward 1.0) won, among the 11 scored rows


def test_curves_of_a_recipe_run_are_per_phase(run_dir: Path) -> None:
    """The recipes log several phases into one metrics.jsonl: series are named per phase, evals (no step) left out."""
    lines = [{"time": 1.0, "phase": "sft", "step": 1, "loss": 3.0},
             {"time": 2.0, "phase": "eval_sft", "reward": 0.2, "win": 0.0},
             {"time": 3.0, "phase": "grpo_rollout", "step": 1, "reward": 0.1, "win": 0.0},
             {"time": 4.0, "phase": "grpo", "step": 1, "reward": -0.3, "loss": 0.01},
             {"time": 5.0, "phase": "grpo_rollout", "step": 2, "reward": 0.3, "win": 0.5}]
    (run_dir / "metrics.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines))
    curves = _get(ViewerApi(TraceIndex(run_dir)), "/api/curves")[1]
    series = {s["name"]: s["points"] for s in curves["series"]}
    assert [s["name"] for s in curves["series"]][:2] == ["grpo_rollout/reward", "grpo_rollout/win"]
    assert series["grpo_rollout/reward"] == [[1, 0.1], [2, 0.3]] and series["grpo/reward"] == [[1, -0.3]]
    assert series["sft/loss"] == [[1, 3.0]] and not any("eval" in n or "time" in n for n in series)


def test_sources_file_folder_and_errors(run_dir: Path, tmp_path: Path) -> None:
    shards = sorted((run_dir / "traces").glob("*.parquet"))
    assert _get(ViewerApi(TraceIndex(shards[0])), "/api/info")[1]["rows"] == 5
    assert _get(ViewerApi(TraceIndex(run_dir / "traces")), "/api/info")[1]["rows"] == 12
    with pytest.raises(SourceError, match="does not exist"):
        TraceIndex(tmp_path / "missing")
    (tmp_path / "notes.txt").write_text("x")
    with pytest.raises(SourceError, match="not a .parquet file"):
        TraceIndex(tmp_path / "notes.txt")
    (tmp_path / "empty").mkdir()
    with pytest.raises(SourceError, match="holds no .parquet file"):
        TraceIndex(tmp_path / "empty")
    (tmp_path / "new-run" / "traces").mkdir(parents=True)  # a run that has not flushed a shard yet
    assert _get(ViewerApi(TraceIndex(tmp_path / "new-run")), "/api/episodes")[1]["total"] == 0
    assert cli_main(["view", str(tmp_path / "missing")]) == 2


def test_scored_version_columns_are_reward_components(run_dir: Path, tmp_path: Path) -> None:
    table = pq.read_table(sorted((run_dir / "traces").glob("*.parquet"))[0])
    table = table.append_column("reward_format", pa.array([0.5] * table.num_rows))
    out = tmp_path / "v1"
    out.mkdir()
    pq.write_table(table, out / "data.parquet")
    api = ViewerApi(TraceIndex(out))
    eid = _get(api, "/api/episodes?limit=1")[1]["episodes"][0]["id"]
    assert _get(api, f"/api/episode/{eid}")[1]["rewards"]["format"] == 0.5


def test_completion_decoded_with_a_local_tokenizer(tmp_path: Path) -> None:
    from openenv_train.policy import build_tiny_tokenizer

    model_dir = tmp_path / "tiny-tokenizer"
    tokenizer = build_tiny_tokenizer()
    tokenizer.save_pretrained(model_dir)
    ids = tokenizer.encode("[crane] guess", add_special_tokens=False)
    turn = build_turn(messages=[{"role": "user", "content": "go"}], message={"role": "assistant", "content": "[crane] guess"},
                      prompt_token_ids=[1, 2], completion_token_ids=ids, logprobs=[-0.5] * len(ids))
    row = TraceRow(env=EnvInfo(name="wordle"), policy=PolicyInfo(model=str(model_dir)), trace=TrainingTrace(turns=[turn]))
    with TraceWriter(tmp_path / "run") as writer:
        writer.write(row)
    api = ViewerApi(TraceIndex(tmp_path / "run"))
    completion = _get(api, f"/api/episode/{row.trace_id}")[1]["turns"][0]["completion"]
    assert completion["source"] == "tokenizer" and "".join(completion["texts"]) == "[crane] guess"
    assert len(completion["texts"]) == len(ids) > 1


def test_http_server_serves_files_and_api(run_dir: Path) -> None:
    server = ViewerServer(run_dir, port=0)
    server.start()
    try:
        def fetch(path: str, method: str = "GET") -> tuple[int, str, bytes]:
            request = urllib.request.Request(server.url + path, method=method)
            try:
                with urllib.request.urlopen(request, timeout=10) as reply:
                    return reply.status, reply.headers["content-type"], reply.read()
            except urllib.error.HTTPError as exc:
                return exc.code, exc.headers["content-type"], exc.read()

        status, ctype, body = fetch("/")
        assert status == 200 and ctype.startswith("text/html") and b"viewer.js" in body
        assert fetch("/viewer.js")[1].startswith("text/javascript") and fetch("/viewer.css")[1].startswith("text/css")
        assert fetch("/api/episodes?limit=2")[0] == 200 and json.loads(fetch("/api/episodes?limit=2")[2])["total"] == 12
        assert fetch("/%2e%2e/_api.py")[0] == 404 and fetch("/../__init__.py")[0] == 404
        assert fetch("/api/nope")[0] == 404 and fetch("/api/info", "POST")[0] == 405
        assert fetch("/", "HEAD")[:2] == (200, "text/html; charset=utf-8")
    finally:
        server.stop()


def test_call_tree_of_a_branched_agent_episode(tmp_path: Path, runs: ModuleType) -> None:
    runs.write_branched_run(tmp_path / "agent")
    api = ViewerApi(TraceIndex(tmp_path / "agent"))
    eid = _get(api, "/api/episodes")[1]["episodes"][0]["id"]
    graph = _get(api, f"/api/episode/{eid}")[1]["call_graph"]
    # by position: a(0) title(1) b(2) b2(3) c(4) d(5); b and the retry b2 both continue a, c continues b2
    assert [(n["node_id"], n["parent"], n["children"]) for n in graph["nodes"]] == [
        ("a", None, [2, 3]), ("title", None, []), ("b", 0, []), ("b2", 0, [4]), ("c", 3, []), ("d", None, [])]
    main = graph["lines"][graph["main"]]
    assert main["calls"] == [0, 3, 4] and main["main"] and main["parent"] is None
    assert [n["main"] for n in graph["nodes"]] == [True, False, False, True, True, False]
    # what each call added to the one it continues: b and b2 add "go on" after a's prompt and reply
    assert [n["new_from"] for n in graph["nodes"]] == [0, 0, 2, 2, 4, 0]
    assert [(line["calls"], line["parent"]) for line in graph["lines"] if not line["main"]] == [
        ([1], None), ([2], 0), ([5], None)]
    # the side call and the rewrite continue no call: where their ids first differ from the closest one
    assert [(b["index"], b["closest"], b["common"], b["kind"]) for b in graph["breaks"]] == [
        (1, 0, 1, "rewritten"), (5, 0, 4, "rewritten")]
    assert call_tree([]) is None and call_tree([{"node_id": "x", "prompt_token_ids": [1]}]) is None
