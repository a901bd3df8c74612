"""Recompute policy vs speed and quality on the default workload, side by side in one run.

    PYTHONPATH=. python benchmarks/recompute_policy.py [--policies "above 0.3, unshared" ...]
                                                      [--publish-modes isolated]

Every cacheprune variant serves the same seeded requests as the full-recompute reference
(no_sharing); F1 "vs full" scores each answer against the reference's answer.
"""

from __future__ import annotations

import argparse

from cacheprune.annotator import AnnotatorConfig, RecomputeAboveShare, RecomputeTopFraction
from cacheprune.detectors import load_policy
from cacheprune.engine import load_default
from cacheprune.serving import EngineConfig, SamplingParams
from eval.data import load_documents, project_data_dir
from eval.runner import compare_with_reference, run_systems
from eval.workload import WorkloadConfig, build_requests

POLICIES = {
    "above 0.3, all": AnnotatorConfig(recompute=RecomputeAboveShare(share=0.3),
                                      recompute_context="all"),
    "above 0.3, unshared": AnnotatorConfig(recompute=RecomputeAboveShare(share=0.3)),
    "above 0.2, unshared": AnnotatorConfig(recompute=RecomputeAboveShare(share=0.2)),
    "above 0.1, unshared": AnnotatorConfig(recompute=RecomputeAboveShare(share=0.1)),
    "top 0.15, unshared": AnnotatorConfig(recompute=RecomputeTopFraction(fraction=0.15)),
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--policies", nargs="+", choices=list(POLICIES), default=list(POLICIES))
    parser.add_argument("--publish-modes", nargs="+", choices=["paper_baseline", "isolated"],
                        default=["paper_baseline", "isolated"])
    args = parser.parse_args()
    documents = load_documents("default", project_data_dir(), 3)
    requests = build_requests(documents, WorkloadConfig(
        num_tenants=4, max_document_words=900, queries_per_document=3))
    model, tokenizer = load_default()
    policy = load_policy()
    sampling = SamplingParams(max_new_tokens=16)
    systems = {"no_sharing": EngineConfig(mode="no_sharing")}
    for label in args.policies:
        for publish_mode in args.publish_modes:
            systems[f"{label} / {publish_mode}"] = EngineConfig(
                mode="cacheprune", publish_mode=publish_mode, annotator=POLICIES[label])
    results = run_systems(systems, model, tokenizer, policy, requests, sampling, 0)
    compare_with_reference(results)
    base = results[0].summary()["ttft_median_s"]
    print(f"\n{'policy / publish mode':<32} {'TTFT med s':>10} {'speed-up':>9} {'hit rate':>9} "
          f"{'doc hits':>9} {'recompute':>10} {'F1':>6} {'F1 vs full':>11}")
    for result in results:
        s = result.summary()
        print(f"{result.name:<32} {s['ttft_median_s']:10.2f} {base / s['ttft_median_s']:8.2f}x "
              f"{s['hit_rate']:9.1%} {s['document_hit_rate_warm']:9.1%} "
              f"{s['recompute_ratio']:10.1%} {s['f1']:6.3f} "
              f"{s['f1_vs_full']:11.3f}")


if __name__ == "__main__":
    main()
