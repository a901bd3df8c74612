"""Prefills that reuse part of the prompt, under the two attention layouts, side by side: an
explicit mask, and the computed rows among blank ones under plain causal attention (what
engine/model.py picks when at least FILL_MIN of the keys are computed).

    python benchmarks/prefill_layouts.py [--tokens 2600] [--repeats 4]

For each plan (nothing reused; a reused prefix of several lengths; three reused spans, as a
cold request with a few hits has) it prints the best and median seconds of each layout and
their ratio. Timings on a busy machine are noise; compare ratios.
"""

from __future__ import annotations

import argparse
import statistics
import time

import torch

import cacheprune.engine.model as engine_model
from cacheprune.engine import PrefillPlan, ReusedSpan, load_default

LAYOUTS = {"mask": 2.0, "blank rows": 0.0}  # FILL_MIN for each: never / always blank rows


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
    }
    default = engine_model.FILL_MIN
    times: dict[tuple[str, str], list[float]] = {}
    try:
        for _ in range(args.repeats):  # interleaved, so that drift hits every cell alike
            for plan_name, ranges in plans.items():
                for layout, fill_min in LAYOUTS.items():
                    engine_model.FILL_MIN = fill_min
                    plan = PrefillPlan(ids, _spans(full.keys, full.values, ranges))
                    started = time.perf_counter()
                    model.prefill(plan)
                    times.setdefault((plan_name, layout), []).append(
                        time.perf_counter() - started)
    finally:
        engine_model.FILL_MIN = default
    print(f"{n} tokens, {args.repeats} repeats; seconds best / median")
    print(f"{'plan':<18}{'computed':>9}{'mask':>16}{'blank rows':>16}{'mask/blank':>12}")
    for plan_name, ranges in plans.items():
        computed = n - sum(b - a for a, b in ranges)
        mask, blank = times[(plan_name, "mask")], times[(plan_name, "blank rows")]
        print(f"{plan_name:<18}{computed:>9}"
              f"{min(mask):>8.2f} / {statistics.median(mask):<5.2f}"
              f"{min(blank):>8.2f} / {statistics.median(blank):<5.2f}"
              f"{statistics.median(mask) / statistics.median(blank):>11.2f}x")


if __name__ == "__main__":
    main()
