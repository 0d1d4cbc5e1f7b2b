"""kill -9 at random moments never leaves a shard that breaks ``datasets``, and resumed runs write each episode once."""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from openenv_train.trace import read_traces, traces_glob
from openenv_train.trace._schema import from_record
from tests.trace._kill_child import SIZE
from tests.trace._rows import check_row

ROOT = Path(__file__).resolve().parents[2]
CHILD = Path(__file__).with_name("_kill_child.py")
EPISODES = 600


def _start(run_dir: Path) -> subprocess.Popen[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.Popen([sys.executable, str(CHILD), str(run_dir), str(EPISODES)], cwd=ROOT, env=env,
                            stdout=subprocess.PIPE, text=True)


def _check_with_datasets(run_dir: Path, cache: Path, checked: set[str]) -> set[str]:
    """Load the folder as a dataset: no episode twice, rows not in ``checked`` complete and exact; the episode ids."""
    import datasets

    if not list((run_dir / "traces").glob("*.parquet")):
        return set()
    ds = datasets.load_dataset("parquet", data_files=traces_glob(run_dir), split="train", cache_dir=str(cache))
    episodes = ds["episode_id"]
    assert len(episodes) == len(set(episodes)), "an episode was written twice"
    for record in ds.to_list():
        if record["episode_id"] not in checked:
            check_row(from_record(record), **SIZE)
    return set(episodes)


@pytest.mark.timeout(900)  # seven writer runs and seven dataset loads; slow on a busy machine
def test_random_kills_never_break_the_dataset(tmp_path: Path) -> None:
    seed = random.randrange(2**32)
    rng = random.Random(seed)
    run_dir, seen = tmp_path / "run", set[str]()
    kills = 0
    for attempt in range(6):
        proc = _start(run_dir)
        assert proc.stdout is not None
        ready = proc.stdout.readline()
        assert ready.startswith("READY"), f"child did not start (seed {seed})"
        assert int(ready.split()[1]) == len(seen), "the resumed writer and datasets disagree on what is written"
        # before its first row, during its first shard (flush_rows=4), then mid-run: after the k-th row it reports
        # (its 4th write flushes a shard, so each later kill leaves rows behind however slow the machine is)
        rows = (0, 1)[attempt] if attempt < 2 else rng.randint(4, 40)
        for _ in range(rows):
            line = proc.stdout.readline()
            assert line.startswith("ROW"), f"child stopped before {rows} rows: {line!r} (seed {seed})"
        proc.send_signal(signal.SIGKILL)
        kills += proc.wait(timeout=120) == -signal.SIGKILL
        now = _check_with_datasets(run_dir, tmp_path / f"cache{attempt}", seen)
        assert seen <= now, f"a written row disappeared (seed {seed})"
        seen = now
    assert kills == 6 and 0 < len(seen) < EPISODES, f"the kills did not land mid-run (seed {seed})"

    proc = _start(run_dir)
    out, _ = proc.communicate(timeout=600)  # ~500 rows, 125 shards: slow on a busy machine
    assert proc.returncode == 0 and out.rstrip().endswith("DONE")
    assert _check_with_datasets(run_dir, tmp_path / "cache-final", seen) == {f"ep{i}" for i in range(EPISODES)}
    assert len(read_traces(run_dir)) == EPISODES
