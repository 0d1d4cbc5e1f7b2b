"""Child process of test_writer_kill: writes episodes 0..N-1 of run "run", skipping those already written.

It prints ``READY <rows already written>``, then ``ROW <i>`` after each row it writes (so the test kills it at
points of its progress, not of the clock), then ``DONE``.
"""

from __future__ import annotations

import sys
from typing import Any

SIZE: dict[str, Any] = {"turns": 3, "n_prompt": 300, "n_completion": 100}


def main(run_dir: str, episodes: int) -> None:
    from openenv_train.trace import TraceWriter
    from tests.trace._rows import make_row

    with TraceWriter(run_dir, flush_rows=4, flush_seconds=0.02) as writer:
        print("READY", writer.rows_written, flush=True)
        for i in range(episodes):
            if not writer.written(("run", f"ep{i}")):
                writer.write(make_row(i, **SIZE))
                print("ROW", i, flush=True)
    print("DONE", flush=True)


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]))
