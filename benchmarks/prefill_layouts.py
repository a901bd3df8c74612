"""Prefills that reuse part of the prompt, under each attention layout, side by side: one
explicit mask over every key; the computed rows among blank ones under plain causal attention
(what engine/model.py picks when at least FILL_MIN of the keys are computed); and the engine's
default, which also splits masked rows in parts, each over the keys its rows can see
(SPLIT_MAX_SCORES).

    python benchmarks/prefill_layouts.py [--tokens 2600] [--repeats 4]

For each plan (nothing reused; a reused prefix of several lengths; three reused spans, as a
cold request with a few hits has; a warm prompt: a computed profile, a reused document, the
last token computed, with or without a computed run inside the document) it prints the best
and median seconds of each layout, and the median of one mask over the default's. Timings on
a busy machine are noise; compare ratios.
"""

from __future__ import annotations

import argparse
import statistics
import time

import torch

import cacheprune.engine.model as engine_model
from cacheprune.engine import PrefillPlan, ReusedSpan, load_default

# (FILL_MIN, SPLIT_MAX_SCORES) of each: never blank rows nor parts / always blank rows / the
# engine's own.
LAYOUTS = {"one mask": (2.0, 0.0), "blank rows": (0.0, 0.0),
           "default": (engine_model.FILL_MIN, engine_model.SPLIT_MAX_SCORES)}


def _spans(full_keys: torch.Tensor, full_values: torch.Tensor,
           ranges: list[tuple[int, int]]) -> list[ReusedSpan]:
    return [ReusedSpan(a, full_keys[:, :, a:b].clone(), full_values[:, :, a:b].clone(),
                       torch.arange(a, b)) for a, b in ranges]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tokens", type=int, default=2600)
    parser.add_argument("--repeats", type=int, default=4)
    args = parser.parse_args()
    n = args.tokens
    model, _ = load_default()
    generator = torch.Generator().manual_seed(0)
    ids = torch.randint(100, model.config.vocab_size, (n,), generator=generator)
    full = model.prefill(PrefillPlan(ids))
    plans = {
        "nothing reused": [],
        "prefix of 30": [(0, 30)],
        f"prefix of {n // 4}": [(0, n // 4)],
        f"prefix of {n // 2}": [(0, n // 2)],
        "three spans": [(0, 30), (n // 5, n // 5 + 200), (3 * n // 5, 3 * n // 5 + 100)],
        "warm prompt": [(40, n - 1)],
        "warm, run inside": [(40, n // 2), (n // 2 + 8, n - 1)],
    }
    defaults = engine_model.FILL_MIN, engine_model.SPLIT_MAX_SCORES
    times: dict[tuple[str, str], list[float]] = {}
    try:
        for _ in range(args.repeats):  # interleaved, so that drift hits every cell alike
            for plan_name, ranges in plans.items():
                for layout, (fill_min, split_max) in LAYOUTS.items():
                    engine_model.FILL_MIN, engine_model.SPLIT_MAX_SCORES = fill_min, split_max
                    plan = PrefillPlan(ids, _spans(full.keys, full.values, ranges))
                    started = time.perf_counter()
                    model.prefill(plan)
                    times.setdefault((plan_name, layout), []).append(
                        time.perf_counter() - started)
    finally:
        engine_model.FILL_MIN, engine_model.SPLIT_MAX_SCORES = defaults
    print(f"{n} tokens, {args.repeats} repeats; seconds best / median")
    print(f"{'plan':<18}{'computed':>9}" + "".join(f"{name:>16}" for name in LAYOUTS)
          + f"{'one mask/default':>18}")
    for plan_name, ranges in plans.items():
        computed = n - sum(b - a for a, b in ranges)
        cells = {name: times[(plan_name, name)] for name in LAYOUTS}
        ratio = statistics.median(cells["one mask"]) / statistics.median(cells["default"])
        print(f"{plan_name:<18}{computed:>9}" + "".join(
            f"{min(cell):>8.2f} / {statistics.median(cell):<5.2f}" for cell in cells.values())
            + f"{ratio:>17.2f}x")


if __name__ == "__main__":
    main()
