"""Engine benchmark: prefill speed against transformers (sdpa) on the same weights, TTFT with
90% of the prompt reused, and the cost of attention capture. Ratios are measured side by side
in one run; run it on an otherwise idle machine.

    python benchmarks/engine_prefill.py [--lengths 1024 2048 4096] [--repeats 2]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time

import torch
from peak_memory import peak_rss_bytes, reset_peak_rss

from cacheprune.engine import (
    AttentionCapture,
    PrefillPlan,
    ReusedSpan,
    SamplingParams,
    generate,
    load_model,
)
from cacheprune.models import converted_folder

MiB = 1024 * 1024


def best_time(fn, repeats: int) -> float:
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times)


def peak_growth(mode: str, n: int) -> int | None:
    """Peak resident memory added by one n-token prefill (`plain` or `capture`), measured in a
    fresh process: in this one, memory freed by earlier runs is reused and hides the growth."""
    # NOTE: with a fixed mmap threshold glibc returns every block of 128 KiB or more to the
    # system when it is freed, so resident memory follows the live tensors. With its default
    # (a threshold that moves) the same measurement varied by +-40 MiB from run to run.
    env = {**os.environ, "MALLOC_MMAP_THRESHOLD_": str(128 * 1024)}
    child = subprocess.run(
        [sys.executable, __file__, "--peak-of", mode, "--lengths", str(n)],
        capture_output=True, text=True, check=True, env=env,
    )
    last = child.stdout.strip().splitlines()[-1]
    return None if last == "n/a" else int(last)


def child_peak(mode: str, n: int) -> None:
    """Print the peak growth of one prefill in this (fresh) process, or n/a."""
    model, _ = load_model(converted_folder(None))
    ids = torch.randint(100, model.config.vocab_size, (n,), generator=torch.Generator())
    capture = AttentionCapture() if mode == "capture" else None
    # NOTE: the warm-up runs the same mode, so that buffers the BLAS libraries keep for the
    # whole process are not counted as growth of one prefill.
    model.prefill(PrefillPlan.full(ids[:256]), capture=capture)
    before = peak_rss_bytes() if reset_peak_rss() else None
    model.prefill(PrefillPlan.full(ids), capture=capture)
    after = peak_rss_bytes()
    print("n/a" if before is None or after is None else after - before)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--lengths", type=int, nargs="+", default=[1024, 2048, 4096])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--reuse", type=float, default=0.9, help="share of the prompt reused")
    parser.add_argument("--peak-of", choices=["plain", "capture"], help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.peak_of:
        child_peak(args.peak_of, args.lengths[0])
        return

    from transformers import AutoModelForCausalLM

    folder = converted_folder(None)
    model, tokenizer = load_model(folder)
    reference = AutoModelForCausalLM.from_pretrained(
        folder, dtype=torch.float32, attn_implementation="sdpa"
    ).eval()
    print(f"model {model.model_id}, torch threads {torch.get_num_threads()}")
    vocab = model.config.vocab_size
    generator = torch.Generator().manual_seed(0)
    rows = []
    for n in args.lengths:
        ids = torch.randint(100, vocab, (n,), generator=generator)
        plain = PrefillPlan.full(ids)
        model.prefill(PrefillPlan.full(ids[:64]))  # warm-up
        full = model.prefill(plain)
        p = int(n * args.reuse)
        span = ReusedSpan(0, full.keys[:, :, :p].clone(), full.values[:, :, :p].clone(),
                          torch.arange(p))
        params = SamplingParams(max_new_tokens=1)
        stops = tokenizer.stop_token_ids
        half = AttentionCapture(layers=tuple(range(0, model.config.num_layers, 2)))
        # NOTE: the contenders alternate within each repeat and each keeps its best time, so a
        # slow spell of the machine does not land on one of them only.
        candidates = {
            "ours": lambda: model.prefill(plain),  # noqa: B023
            "hf": lambda: reference(ids[None], logits_to_keep=1),  # noqa: B023
            "capture": lambda: model.prefill(plain, capture=AttentionCapture()),  # noqa: B023
            "capture_half": lambda: model.prefill(plain, capture=half),  # noqa: B023
        }
        best = {name: float("inf") for name in candidates}
        ttft_none = ttft_reuse = float("inf")
        with torch.no_grad():
            for _ in range(args.repeats):
                for name, fn in candidates.items():
                    best[name] = min(best[name], best_time(fn, 1))
                ttft_none = min(ttft_none, generate(model, plain, params, stops).stats.ttft_s)
                ttft_reuse = min(ttft_reuse, generate(
                    model, PrefillPlan(ids, [span]), params, stops).stats.ttft_s)
        ours, theirs, capture_s = best["ours"], best["hf"], best["capture"]
        half_s = best["capture_half"]
        mem_plain, mem_capture = peak_growth("plain", n), peak_growth("capture", n)
        rows.append((n, ours, theirs, ttft_none, ttft_reuse, capture_s, half_s, mem_plain,
                     mem_capture))

    print("\nprefill: cacheprune engine vs transformers sdpa (same float32 weights)")
    print(f"{'tokens':>7} {'ours s':>8} {'hf s':>8} {'ours/hf':>8}")
    for n, ours, theirs, *_ in rows:
        print(f"{n:>7} {ours:8.3f} {theirs:8.3f} {ours / theirs:8.2f}")
    print(f"\nTTFT with {args.reuse:.0%} of the prompt reused vs computing everything")
    print(f"{'tokens':>7} {'none s':>8} {'reuse s':>8} {'speed-up':>9}")
    for n, _, _, none, reuse, *_ in rows:
        print(f"{n:>7} {none:8.3f} {reuse:8.3f} {none / reuse:8.2f}x")
    print("\nattention capture (all heads averaged into one n x n matrix; all 30 layers, and "
          "every other layer as the sharing engine does by default)")
    print(f"{'tokens':>7} {'plain s':>8} {'capture s':>10} {'overhead':>9} {'half s':>7} "
          f"{'overhead':>9} {'peak MiB':>9} {'+capture MiB':>13} {'n*n*4 MiB':>10}")
    for n, ours, _, _, _, capture_s, half_s, mem_plain, mem_capture in rows:
        extra = "n/a" if mem_plain is None or mem_capture is None else \
            f"{(mem_capture - mem_plain) / MiB:.0f}"
        plain_mib = "n/a" if mem_plain is None else f"{mem_plain / MiB:.0f}"
        print(f"{n:>7} {ours:8.3f} {capture_s:10.3f} {capture_s / ours - 1:8.0%} "
              f"{half_s:7.3f} {half_s / ours - 1:8.0%} "
              f"{plain_mib:>9} {extra:>13} {n * n * 4 / MiB:10.0f}")


if __name__ == "__main__":
    main()
