"""One batch decode alone vs beside a busy Python thread, at Python's default thread switch interval and at the
one ``LocalConfig.decode_switch_s`` sets while a batch decodes.

A decode step of the tiny model is ~100 small torch ops; each gives up the GIL while it runs and takes it back
after. When another thread of the process is running Python (the policy endpoint's event loop parsing a request,
a trainer's loop), taking it back can wait until that thread is made to yield: up to the switch interval. The
busy thread here does what the endpoint's loop does with a constrained Wordle request, over and over: parse its
JSON body (a 10,000-word choice list; C code, which holds the GIL throughout) and check each choice in Python.

Each setting runs alone and beside the busy thread in alternating rounds, so a shared machine's noise lands on
both; printed: the median batch time of each, and beside/alone::

    python benchmarks/decode_gil.py [--rows 32] [--tokens 24] [--rounds 7] [--intervals 0.005 0.0005]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=32, help="rows in the batch")
    parser.add_argument("--tokens", type=int, default=24, help="new tokens per row")
    parser.add_argument("--rounds", type=int, default=7, help="timed batches per setting and condition")
    parser.add_argument("--intervals", type=float, nargs="+", default=[0.005, 0.0005],
                        help="switch intervals in seconds (Python's default is 0.005)")
    args = parser.parse_args(argv)

    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from openenv_train.policy import DecodeRow, SamplingParams, build_tiny_model, generate_rows

    torch.set_num_threads(1)  # what LocalBackend decodes a tiny CPU model with
    with tempfile.TemporaryDirectory() as tmp:
        path = build_tiny_model(Path(tmp) / "tiny", seed=0)
        model, tokenizer = AutoModelForCausalLM.from_pretrained(path).eval(), AutoTokenizer.from_pretrained(path)
    rows = [DecodeRow(list(range(5, 45)), SamplingParams(temperature=1.0), args.tokens, i, frozenset({-1}))
            for i in range(args.rows)]
    body = json.dumps({"messages": [{"role": "user", "content": "marks"}], "guided_choice": ["crane"] * 10_000})
    busy = threading.Event()
    stop = threading.Event()

    def parse_requests() -> None:
        while not stop.is_set():
            busy.wait()
            choices = json.loads(body)["guided_choice"]
            assert all(isinstance(c, str) and c.isalpha() for c in choices)

    worker = threading.Thread(target=parse_requests, daemon=True)
    worker.start()
    generate_rows(model, tokenizer, rows, pad_id=0)  # warm-up
    default = sys.getswitchinterval()
    times: dict[tuple[float, bool], list[float]] = {(i, b): [] for i in args.intervals for b in (False, True)}
    try:
        for _ in range(args.rounds):
            for interval in args.intervals:
                sys.setswitchinterval(interval)
                for beside in (False, True):
                    busy.set() if beside else busy.clear()
                    start = time.perf_counter()
                    generate_rows(model, tokenizer, rows, pad_id=0)
                    times[interval, beside].append(time.perf_counter() - start)
                busy.clear()
    finally:
        sys.setswitchinterval(default)
        stop.set()
        busy.set()
        worker.join()
    print(f"tiny model, {args.rows} rows x {args.tokens} new tokens, 1 torch thread, {args.rounds} rounds, medians")
    print(f"{'switch interval':>16} {'alone ms':>9} {'beside ms':>10} {'beside/alone':>12}")
    for interval in args.intervals:
        alone = statistics.median(times[interval, False])
        beside = statistics.median(times[interval, True])
        print(f"{interval * 1e3:>13.2f} ms {alone * 1e3:>9.0f} {beside * 1e3:>10.0f} {beside / alone:>11.2f}x")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
