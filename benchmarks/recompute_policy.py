"""Recompute budget vs speed and closeness to full recomputation, side by side in one run.

    PYTHONPATH=. python benchmarks/recompute_policy.py [--policies "top 0.15" ...]
        [--publish-modes isolated] [--out results/recompute_policy.png]

Every cacheprune variant serves the same seeded requests of the default workload as the
full-recompute reference (no_sharing), taking turns request by request. Per variant: the
paired speed-up over warm requests (no sharing's TTFT / the variant's, same request), the
share of reused tokens recomputed, and the full-recomputation answer teacher-forced under the
variant's KV (top-1 agreement, KL per token; eval.agreement). The plot puts the speed-up
against top-1 agreement and KL, one line per publish mode, one point per budget.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from cacheprune.annotator import AnnotatorConfig, RecomputeAboveShare, RecomputeTopFraction
from cacheprune.detectors import load_policy
from cacheprune.engine import load_default
from cacheprune.serving import EngineConfig, SamplingParams
from eval.data import load_documents, project_data_dir
from eval.runner import REFERENCE, SystemResult, compare_with_reference, run_systems
from eval.workload import WorkloadConfig, build_requests

# Budgets from none to half of each segment; "above 0.3" is the default policy.
POLICIES = {
    "none": AnnotatorConfig(recompute=RecomputeTopFraction(fraction=0.0)),
    "above 0.3": AnnotatorConfig(recompute=RecomputeAboveShare(share=0.3)),
    "above 0.1": AnnotatorConfig(recompute=RecomputeAboveShare(share=0.1)),
    "top 0.05": AnnotatorConfig(recompute=RecomputeTopFraction(fraction=0.05)),
    "top 0.15": AnnotatorConfig(recompute=RecomputeTopFraction(fraction=0.15)),
    "top 0.3": AnnotatorConfig(recompute=RecomputeTopFraction(fraction=0.3)),
    "above 0.3, all": AnnotatorConfig(recompute=RecomputeAboveShare(share=0.3),
                                      recompute_context="all"),
}
HEADER = (f"{'policy / publish mode':<30} {'paired':>8} {'TTFT med s':>10} {'doc hits':>9} "
          f"{'recompute':>10} {'top-1':>7} {'KL':>8} {'LL gap':>8} {'F1 vs full':>11}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--policies", nargs="+", choices=list(POLICIES), default=list(POLICIES))
    parser.add_argument("--publish-modes", nargs="+", choices=["paper_baseline", "isolated"],
                        default=["paper_baseline", "isolated"])
    parser.add_argument("--max-words", type=int, default=900)
    parser.add_argument("--out", type=Path, default=Path("results/recompute_policy.png"))
    args = parser.parse_args()
    documents = load_documents("default", project_data_dir(), 3)
    requests = build_requests(documents, WorkloadConfig(
        num_tenants=4, max_document_words=args.max_words, queries_per_document=3))
    model, tokenizer = load_default()
    systems = {REFERENCE: EngineConfig(mode="no_sharing")}
    for label in args.policies:
        for publish_mode in args.publish_modes:
            # NOTE: k = 1: every request after a document's first is warm, which gives the
            # budgets more requests to be compared on (the threshold does not change the KV).
            systems[f"{label} / {publish_mode}"] = EngineConfig(
                mode="cacheprune", publish_mode=publish_mode, annotator=POLICIES[label],
                publish_threshold=1)
    results = run_systems(systems, model, tokenizer, load_policy(), requests,
                          SamplingParams(max_new_tokens=32), 0, attacked=())
    compare_with_reference(results)
    reference = next(r for r in results if r.name == REFERENCE).summary()
    print(f"\n{len(requests)} requests; {REFERENCE}: TTFT median "
          f"{reference['ttft_median_s']:.2f} s (the baseline's absolute time)\n\n{HEADER}")
    for result in results:
        s = result.summary()
        print(f"{result.name:<30} {s.get('paired_speedup_warm', 0.0):7.2f}x "
              f"{s['ttft_median_s']:10.2f} {s['document_hit_rate_warm']:9.1%} "
              f"{s['recompute_ratio']:10.1%} {s.get('top1_vs_full', 0.0):7.1%} "
              f"{s.get('kl_vs_full', 0.0):8.4f} {s.get('loglik_gap_vs_full', 0.0):8.4f} "
              f"{s['f1_vs_full']:11.3f}")
    _plot([r for r in results if r.name != REFERENCE], args.out)
    print(f"\nplot: {args.out}")


def _plot(results: list[SystemResult], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    path.parent.mkdir(parents=True, exist_ok=True)
    fig, axes = plt.subplots(1, 2, figsize=(14, 4.5))
    policies = list(dict.fromkeys(r.name.rsplit(" / ", 1)[0] for r in results))
    markers = dict(zip(policies, "osD^v<>PX*", strict=False))
    colors = {"isolated": "#2ca02c", "paper_baseline": "#1f77b4"}  # the report's colours
    # NOTE: markers, not text labels: points of equal quality (isolated mode's, whose marks
    # do not depend on the budget) would print their labels over each other.
    for ax, key, label in ((axes[0], "top1_vs_full", "top-1 agreement with full recompute"),
                           (axes[1], "kl_vs_full", "KL(full || system) per token")):
        for result in results:
            policy, mode = result.name.rsplit(" / ", 1)
            s = result.summary()
            ax.scatter(s.get("paired_speedup_warm", 0.0), s.get(key, 0.0),
                       marker=markers.get(policy, "o"), color=colors.get(mode, "#9e9e9e"),
                       s=50, alpha=0.8, label=f"{policy} / {mode}")
        ax.set_xlabel("TTFT speed-up over no sharing (warm, paired)")
        ax.set_ylabel(label)
    axes[1].legend(fontsize=7, loc="center left", bbox_to_anchor=(1.02, 0.5))
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


if __name__ == "__main__":
    main()
