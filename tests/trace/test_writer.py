"""TraceWriter: round trip, the fixed Arrow schema, flush by size and time, resume, exactly-once, migration."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from openenv_train.trace import (
    TRACE_SCHEMA,
    RunDirLocked,
    TraceReadError,
    TraceWriteError,
    TraceWriter,
    _schema,
    episode_key,
    load_dataset,
    read_traces,
    shard_paths,
)
from tests.trace._rows import make_row


class FakeClock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_round_trip_rows_are_equal(tmp_path: Path) -> None:
    rows = [make_row(i) for i in range(5)] + [make_row(5, ok=False, reward=None), make_row(6, turns=0)]
    with TraceWriter(tmp_path, flush_rows=3) as writer:
        assert writer.write_many(rows) == len(rows)
    assert read_traces(tmp_path) == rows
    assert len(shard_paths(tmp_path)) == 3  # 3 + 3 + 1 (the last one on close)
    assert read_traces(tmp_path / "missing") == []


def test_arrow_schema_keeps_token_lists_nested(tmp_path: Path) -> None:
    with TraceWriter(tmp_path) as writer:
        writer.write(make_row(0))
    schema = pq.read_schema(shard_paths(tmp_path)[0])
    assert schema.remove_metadata() == TRACE_SCHEMA.remove_metadata()
    turn = schema.field("turns").type.value_type
    assert turn.field("prompt_token_ids").type == pa.list_(pa.int64())
    assert turn.field("completion_token_ids").type == pa.list_(pa.int64())
    assert turn.field("per_token_logps").type == pa.list_(pa.float64())
    assert turn.field("loss_mask").type == pa.list_(pa.int8())
    assert turn.field("request").type == pa.string()
    assert schema.field("reward").type == pa.float64() and schema.field("ok").type == pa.bool_()
    assert schema.field("error").type == pa.struct([("type", pa.string()), ("message", pa.string())])
    record = pq.read_table(shard_paths(tmp_path)[0]).to_pylist()[0]
    assert record["turns"][0]["prompt_token_ids"] == [0, 1, 2, 3, 4, 5]
    assert json.loads(record["task"])["nested"] == {"a": [1, 2.5, None]}
    assert record["reward"] == 1.0 and record["error"] is None


def test_flush_by_row_count(tmp_path: Path) -> None:
    writer = TraceWriter(tmp_path, flush_rows=4, flush_seconds=1e9)
    for i in range(9):
        writer.write(make_row(i))
    assert (writer.rows_written, writer.pending, len(writer.shards)) == (8, 1, 2)
    writer.close()
    assert writer.rows_written == 9 and writer.closed
    with pytest.raises(TraceWriteError, match="closed"):
        writer.write(make_row(10))


def test_flush_by_time_on_write(tmp_path: Path) -> None:
    clock = FakeClock()
    writer = TraceWriter(tmp_path, flush_rows=100, flush_seconds=5.0, clock=clock)
    writer.write(make_row(0))
    clock.now = 4.9
    writer.write(make_row(1))
    assert writer.rows_written == 0 and writer.pending == 2
    clock.now = 5.0  # the oldest buffered row is 5 s old: this write flushes all three
    writer.write(make_row(2))
    assert writer.rows_written == 3 and writer.pending == 0
    clock.now = 100.0
    writer.write(make_row(3))  # the age counts from the oldest buffered row, not the last flush
    assert writer.pending == 1
    assert writer.flush() is not None and writer.flush() is None
    writer.close()
    assert len(shard_paths(tmp_path)) == 2


def test_resume_skips_written_episodes(tmp_path: Path) -> None:
    with TraceWriter(tmp_path, flush_rows=2) as writer:
        writer.write_many(make_row(i) for i in range(5))
    with TraceWriter(tmp_path, resume=True) as writer:
        assert writer.rows_written == 5
        assert writer.written(("run", "ep3")) and not writer.written(("run", "ep7"))
        assert writer.written(make_row(4))  # a re-run of ep4: new trace id, same (run_id, episode_id)
        todo = [i for i in range(8) if not writer.written(("run", f"ep{i}"))]
        assert todo == [5, 6, 7]
        assert writer.write(make_row(2)) is False  # skipped, not written twice
        writer.write_many(make_row(i) for i in todo)
        assert writer.write(make_row(2, run_id="other-run")) is True  # another run's ep2 is another episode
    episodes = [(r.run_id, r.episode_id) for r in read_traces(tmp_path)]
    assert len(episodes) == len(set(episodes)) == 9


def test_threads_write_each_episode_once(tmp_path: Path) -> None:
    import threading

    rows = [make_row(i % 40) for i in range(160)]  # every episode offered 4 times, from different threads
    with TraceWriter(tmp_path, flush_rows=7) as writer:
        accepted: list[int] = []

        def worker(part: list[Any]) -> None:
            accepted.append(writer.write_many(part))

        threads = [threading.Thread(target=worker, args=(rows[k::4],)) for k in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    assert sum(accepted) == 40
    assert sorted(r.episode_id for r in read_traces(tmp_path)) == sorted(f"ep{i}" for i in range(40))


def test_duplicates_by_trace_id_and_error_mode(tmp_path: Path) -> None:
    row = make_row(0).model_copy(update={"episode_id": ""})
    assert episode_key(row) == row.trace_id and episode_key(make_row(1)) == ("run", "ep1")
    with TraceWriter(tmp_path, on_duplicate="error") as writer:
        writer.write(row)
        assert writer.written(row.trace_id)
        with pytest.raises(TraceWriteError, match="already written"):
            writer.write(row)
        writer.write(make_row(1))
        with pytest.raises(TraceWriteError, match="already written"):
            writer.write(make_row(1))
    assert len(read_traces(tmp_path)) == 2


def test_one_writer_per_run_dir_and_resume_false(tmp_path: Path) -> None:
    with TraceWriter(tmp_path) as writer:
        with pytest.raises(RunDirLocked):
            TraceWriter(tmp_path)
        writer.write(make_row(0))
    with pytest.raises(TraceWriteError, match="resume=True"):
        TraceWriter(tmp_path, resume=False)
    TraceWriter(tmp_path).close()  # the lock was released by close()
    with pytest.raises(ValueError):
        TraceWriter(tmp_path / "x", flush_rows=0)


def test_adopts_shards_missing_from_manifest_and_drops_leftovers(tmp_path: Path) -> None:
    with TraceWriter(tmp_path, flush_rows=2) as writer:
        writer.write_many(make_row(i) for i in range(4))
    traces = tmp_path / "traces"
    manifest = json.loads((traces / "manifest.json").read_text())
    manifest["shards"] = manifest["shards"][:1]  # as if killed between a shard rename and the manifest update
    (traces / "manifest.json").write_text(json.dumps(manifest))
    (traces / "part-00009-deadbeef.parquet.tmp").write_bytes(b"PAR1 half a shard")
    with TraceWriter(tmp_path) as writer:
        assert writer.rows_written == 4 and writer.written(("run", "ep3"))
        assert writer.write(make_row(3)) is False
    assert not list(traces.glob("*.tmp"))
    assert json.loads((traces / "manifest.json").read_text())["rows"] == 4
    (traces / "manifest.json").write_text("{not json")
    with TraceWriter(tmp_path) as writer:  # an unreadable manifest is rebuilt from the shards
        assert writer.rows_written == 4


def test_reader_migrates_older_rows_and_refuses_newer(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with TraceWriter(tmp_path) as writer:
        writer.write(make_row(0))
    path = shard_paths(tmp_path)[0]
    table = pq.read_table(path)
    old = table.set_column(0, "schema_version", pa.array([0], pa.int32()))
    pq.write_table(old, path)

    with pytest.raises(TraceReadError, match="no migration from trace row schema_version 0"):
        read_traces(tmp_path)

    def v0_to_v1(record: dict[str, Any]) -> dict[str, Any]:
        return {**record, "task": {**record["task"], "migrated": True}}

    monkeypatch.setitem(_schema.MIGRATIONS, 0, v0_to_v1)
    (row,) = read_traces(tmp_path)
    assert row.task["migrated"] is True and row.schema_version == 1

    pq.write_table(table.set_column(0, "schema_version", pa.array([99], pa.int32())), path)
    with pytest.raises(TraceReadError, match="newer"):
        read_traces(tmp_path)


def test_datasets_loads_the_folder_in_one_line(tmp_path: Path) -> None:
    import datasets

    assert len(load_dataset(tmp_path)) == 0  # no shard yet: empty, same columns
    with TraceWriter(tmp_path, flush_rows=2) as writer:
        writer.write_many(make_row(i) for i in range(5))
    (tmp_path / "traces" / "part-00077-0badc0de.parquet.tmp").write_bytes(b"garbage")  # a killed writer's
    ds = datasets.load_dataset("parquet", data_files=f"{tmp_path}/traces/*.parquet", split="train",
                               cache_dir=str(tmp_path / "cache"))
    assert len(ds) == 5 and sorted(ds["episode_id"]) == [f"ep{i}" for i in range(5)]
    assert ds.features["turns"].feature["prompt_token_ids"] == datasets.List(datasets.Value("int64"))
    assert ds[0]["turns"][1]["completion_token_ids"] == [150, 151, 152, 153]
    same = load_dataset(tmp_path, cache_dir=str(tmp_path / "cache"))
    assert same["trace_id"] == ds["trace_id"]
