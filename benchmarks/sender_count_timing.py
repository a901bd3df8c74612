"""What the time of the publication threshold's count could tell one tenant. The count checks
each window's sender marks with the pool key (the store cannot count them itself: a writer
without the key could plant marks). If it read every mark a window holds, a window that
another tenant sent would cost one more 16-byte mark to move and decrypt, and an attacker who
sends a guess of another tenant's text below the threshold could time whether the guess was
right. So every window answers exactly k marks, padded (`threshold.PAD`); this benchmark
checks that the time no longer depends on the senders.

For each backend, one tenant's count of the same 2,048-token prompt is timed (after a first
call that left its own marks) when the prompt's windows hold its mark only (a wrong guess),
one other tenant's mark as well (a right guess), and the most a window keeps (4k marks).
Printed: median and p10-p90 of each over the repeats, and the right-minus-wrong difference
per window. A right and a wrong guess differ only in the windows over the guessed value
(about match_window plus the value's tokens, ~20), so the signal is about 20 times the
per-window figure, against a first-token time of hundreds of milliseconds.

  PYTHONPATH=. python benchmarks/sender_count_timing.py [--repeats 50] [--threshold 3]
"""

from __future__ import annotations

import argparse
import secrets
import statistics
import tempfile
import time
from pathlib import Path

import numpy as np

from cacheprune.pool import EntryIdentity, KVShape, PoolConfig, Scope, open_pool
from cacheprune.pool.local_valkey import LocalValkey
from cacheprune.pool.threshold import CAP_PER_THRESHOLD

SHAPE = KVShape(30, 3, 64)
NUM_TOKENS = 2048
WINDOW = 16
KEY = secrets.token_hex(32)
IDENTITY = EntryIdentity.for_shape("bench-model", "policy", SHAPE)


def timed_counts(pool, threshold: int, repeats: int) -> dict[str, list[float]]:
    """Seconds of the reader's count for each case, on fresh prompts per case."""
    rng = np.random.default_rng(0)
    no_mask = np.zeros(NUM_TOKENS, dtype=bool)
    others = {"wrong guess (reader only)": 0, "right guess (+1 sender)": 1,
              f"full window ({CAP_PER_THRESHOLD * threshold} marks)":
                  CAP_PER_THRESHOLD * threshold - 1}
    timings = {}
    for case, num_others in others.items():
        tokens = rng.integers(0, 49_000, NUM_TOKENS).astype(np.int64)
        for other in range(num_others):
            pool.threshold.record(Scope(IDENTITY, f"other-{other}"), tokens, no_mask)
        reader = Scope(IDENTITY, "reader")
        pool.threshold.record(reader, tokens, no_mask)  # its own marks, as a probe leaves
        seconds = []
        for _ in range(repeats):
            started = time.perf_counter()
            pool.threshold.record(reader, tokens, no_mask)
            seconds.append(time.perf_counter() - started)
        timings[case] = seconds
    return timings


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=50)
    parser.add_argument("--threshold", type=int, default=3)
    args = parser.parse_args()
    config = PoolConfig(kv_shape=SHAPE, budget_bytes=2**30, max_context_tokens=4096,
                        min_entry_tokens=WINDOW, publish_threshold=args.threshold)
    with tempfile.TemporaryDirectory() as folder, \
            LocalValkey(Path(folder) / "valkey") as server:
        backends = {"memory://": "memory://", "file://": f"file://{folder}/pool",
                    "valkey (unix socket)": server.url}
        windows = NUM_TOKENS - WINDOW + 1
        print(f"count of one {NUM_TOKENS}-token prompt ({windows} windows), "
              f"k = {args.threshold}, {args.repeats} repeats")
        print(f"{'backend':22s} {'case':26s} {'median':>9s} {'p10-p90':>17s}")
        for name, url in backends.items():
            pool = open_pool(url, config, pool_key=KEY)
            timings = timed_counts(pool, args.threshold, args.repeats)
            medians = {}
            for case, seconds in timings.items():
                deciles = statistics.quantiles(seconds, n=10)
                medians[case] = statistics.median(seconds)
                print(f"{name:22s} {case:26s} {medians[case] * 1e3:7.2f}ms "
                      f"{deciles[0] * 1e3:7.2f}-{deciles[-1] * 1e3:.2f}ms")
            wrong, right = list(medians.values())[:2]
            print(f"{name:22s} right - wrong guess: {(right - wrong) / windows * 1e6:+.3f} µs "
                  f"per window, {(right - wrong) / windows * 20 * 1e6:+.1f} µs for 20 windows")
            pool.close()


if __name__ == "__main__":
    main()
