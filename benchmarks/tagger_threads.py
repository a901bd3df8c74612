"""The token tagger's time in the thread that ran the served model and in other threads, side by
side: why the chain runs it in its caller's thread and vLLM's detection thread has one torch
thread (docs/detectors.md, "Twelfth round").

    python benchmarks/tagger_threads.py [--tokens 4096] [--repeats 5]

Once a thread of the process holds an OpenMP team (here: the engine's prefill in the main
thread), torch in another thread gets a second team; with more OpenMP threads than cores,
libgomp stops spinning between parallel regions. Times are medians over --repeats runs of the
tagger on the same request (`detectors_throughput.build_request`).
"""

from __future__ import annotations

import argparse
import statistics
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

import torch
from detectors_throughput import build_request

from cacheprune.detectors.tagger import TaggerDetector
from cacheprune.engine import PrefillPlan, load_default
from cacheprune.models import load_tokenizer


def median_s(fn: Callable[[], object], repeats: int) -> float:
    times = []
    for _ in range(repeats):
        started = time.perf_counter()
        fn()
        times.append(time.perf_counter() - started)
    return statistics.median(times)


def in_new_thread(fn: Callable[[], object]) -> float:
    result: list[float] = []
    thread = threading.Thread(target=lambda: result.append(fn()))  # type: ignore[func-returns-value]
    thread.start()
    thread.join()
    return result[0]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tokens", type=int, default=4096)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()

    text, _ = build_request(load_tokenizer(), args.tokens, None)
    tagger = TaggerDetector()

    def tag() -> float:
        tagger.detect(text)  # warm-up
        return median_s(lambda: tagger.detect(text), args.repeats)

    # First, before the prefill (loading the tagger may already have run parallel regions).
    rows = [("another thread, before the prefill", in_new_thread(tag))]
    model, tokenizer = load_default()
    with torch.inference_mode():
        model.prefill(PrefillPlan.full(tokenizer.encode(text).ids[:512]))  # the main thread's team
    rows.append(("calling thread (the model's)", tag()))
    rows.append(("another thread, beside the model's team", in_new_thread(tag)))
    engine_threads = torch.get_num_threads()
    for threads in (engine_threads, 1):
        with ThreadPoolExecutor(1, initializer=torch.set_num_threads,
                                initargs=(threads,)) as pool:
            rows.append((f"a worker thread with {threads} torch thread(s)",
                         pool.submit(tag).result()))
        torch.set_num_threads(engine_threads)

    base = rows[1][1]
    print(f"tagger on {args.tokens} tokens ({len(text)} chars), {engine_threads} torch threads "
          f"in the main thread; medians of {args.repeats}")
    print(f"{'where':<44} {'ms':>8} {'/ calling thread':>17}")
    for label, seconds in rows:
        print(f"{label:<44} {seconds * 1e3:>8.1f} {seconds / base:>16.2f}x")


if __name__ == "__main__":
    main()
