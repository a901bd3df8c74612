"""The evaluation's targets (from the CachePrune results), checked against one run's figures."""

from __future__ import annotations

from eval.bound import Bound, share_of_bound
from eval.runner import REFERENCE, SystemResult

MIN_SPEEDUP = 4.5  # TTFT of no sharing / TTFT, same request, median over warm requests
MIN_DOCUMENT_HIT_RATE = 0.946  # of non-private document tokens, warm requests
MIN_HITS_OVER_FIXED_CHUNKS = 1.44
MAX_QUALITY_DROP = 0.01  # F1 and ROUGE-L, against the references, vs full recompute
# isolated mode: the full-recomputation answer's top token, teacher-forced under its KV
MIN_TOP1_AGREEMENT = 0.95
TOP1_TARGET_SYSTEM = "cacheprune_isolated"
MIN_SHARE_OF_BOUND = 0.85  # oracle bound TTFT / TTFT, median over warm requests
MAX_VALUES_RECOVERED = 0.01  # private values recovered by any attack, default policy
MIN_GLOBAL_PREFIX_LOSS = 0.90  # the positive control: the prober must see the unsafe cache leak


def target_rows(results: list[SystemResult],
                bound: Bound | None = None) -> list[tuple[str, str, str, str]]:
    """(target, system, measured, verdict) for each cacheprune system, and the check that the
    unsafe global prefix cache does leak (which shows the prober works)."""
    summaries = {r.name: r.summary() for r in results}
    reference = summaries.get(REFERENCE)
    chunks = next((s for name, s in summaries.items() if name.startswith("fixed_chunks")), None)
    rows: list[tuple[str, str, str, str]] = []
    shares = {} if bound is None else {r.name: share_of_bound(bound, {q.request_id: q.ttft_s
                                                                      for q in r.requests})
                                       for r in results}
    served = {r.name for r in results if r.served}
    for name, s in summaries.items():
        if not name.startswith("cacheprune") or name not in served:
            continue
        if "paired_speedup_warm" in s:
            speedup = s["paired_speedup_warm"]
            rows.append((f"TTFT speed-up (warm, paired) >= {MIN_SPEEDUP}x", name,
                         f"{speedup:.2f}x", _at_least(speedup, MIN_SPEEDUP, "{:.2f}x")))
        if "top1_vs_full" in s:
            top1 = s["top1_vs_full"]
            rows.append((f"top-1 agreement with full recompute >= {MIN_TOP1_AGREEMENT:.0%}",
                         name, f"{top1:.1%} (KL {s['kl_vs_full']:.4f})",
                         _at_least(top1, MIN_TOP1_AGREEMENT, "{:.1%}")
                         if name == TOP1_TARGET_SYSTEM else "reported (target: isolated mode)"))
        if reference is not None:
            for metric in ("f1", "rouge_l"):
                drop = reference[metric] - s[metric]
                rows.append((f"{metric} within {MAX_QUALITY_DROP:.2f} of full recompute", name,
                             f"{s[metric]:.3f} vs {reference[metric]:.3f}",
                             _at_most(drop, MAX_QUALITY_DROP, "{:.3f}")))
        hit = s["document_hit_rate_warm"]
        rows.append((f"document hit rate >= {MIN_DOCUMENT_HIT_RATE:.1%}", name, f"{hit:.1%}",
                     _at_least(hit, MIN_DOCUMENT_HIT_RATE, "{:.1%}")))
        if chunks is not None:
            chunk_hit = chunks["document_hit_rate_warm"]
            measured = f"{hit:.1%} vs {chunk_hit:.1%}"
            if chunk_hit > 0:
                ratio = hit / chunk_hit
                verdict = _at_least(ratio, MIN_HITS_OVER_FIXED_CHUNKS, "{:.2f}x")
                measured += f" ({ratio:.2f}x)"
            else:
                verdict = "met (fixed chunks hit nothing)" if hit > 0 else "missed (no hits)"
            rows.append((f"hit rate >= {MIN_HITS_OVER_FIXED_CHUNKS}x fixed chunks", name,
                         measured, verdict))
        share = shares.get(name)
        if share is not None:
            rows.append((f"warm TTFT >= {MIN_SHARE_OF_BOUND:.0%} of the oracle bound", name,
                         f"{share:.0%}", _at_least(share, MIN_SHARE_OF_BOUND, "{:.0%}")))
        if "values_recovered" in s:
            lost = s["values_recovered"]
            rows.append((f"values recovered by any attack <= {MAX_VALUES_RECOVERED:.0%}", name,
                         f"{lost:.1%} of {s['values_attacked']:.0f}",
                         _at_most(lost, MAX_VALUES_RECOVERED, "{:.1%}")))
            masked = s["masked_values_recovered"]
            rows.append(("no fully masked value recovered", name, f"{masked:.0f}",
                         "met" if masked == 0 else f"missed: {masked:.0f} recovered"))
    for name, s in summaries.items():
        if name.startswith("global_prefix") and "values_recovered" in s:
            lost = s["values_recovered"]
            rows.append((f"the unsafe global prefix cache loses >= {MIN_GLOBAL_PREFIX_LOSS:.0%} "
                         "(the prober works)", name, f"{lost:.1%}",
                         _at_least(lost, MIN_GLOBAL_PREFIX_LOSS, "{:.1%}")))
    return rows


def targets_table(results: list[SystemResult], bound: Bound | None = None) -> str:
    lines = ["| target | system | measured | verdict |", "|---|---|---|---|"]
    lines += [f"| {' | '.join(row)} |" for row in target_rows(results, bound)]
    return "\n".join(lines)


def _at_least(value: float, target: float, fmt: str) -> str:
    return "met" if value >= target else f"missed by {fmt.format(target - value)}"


def _at_most(value: float, limit: float, fmt: str) -> str:
    return "met" if value <= limit else f"missed by {fmt.format(value - limit)}"
