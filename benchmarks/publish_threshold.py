"""What the publication threshold costs: isolated mode at k = 1, 2, 3 side by side in one run.

    PYTHONPATH=. python benchmarks/publish_threshold.py [--thresholds 1 2 3] [--tenants 8]
        [--max-docs 2] [--max-words 900] [--out results/publish_threshold.png]

Every variant serves the same seeded requests of the default workload (each document asked by
`--tenants` distinct tenants, two per question, private details before, inside and after it)
as no sharing, taking turns request by request. A request is warm for a variant once k
distinct tenants sent its document before it; each variant is compared with an oracle bound
that counts the same rule (`OracleBound(threshold=k)`: a token is reusable once k tenants
carried it). Printed per k: how many requests per document ran before reuse began, the paired
speed-up over warm requests, TTFT, hit rates and the median share of the bound; the plot shows
TTFT per request in arrival order for each k.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from cacheprune.detectors import DetectionPolicy, load_policy
from cacheprune.engine import Transformer, load_default
from cacheprune.models import ChatTokenizer
from cacheprune.serving import EngineConfig, SamplingParams
from eval.bound import Bound, OracleBound, share_of_bound
from eval.data import load_documents, project_data_dir
from eval.runner import (
    REFERENCE,
    DocumentSenders,
    SystemResult,
    compare_with_reference,
    run_systems,
)
from eval.workload import Request, WorkloadConfig, build_requests

HEADER = (f"{'k':>3} {'before reuse':>13} {'warm':>5} {'paired':>8} {'TTFT med s':>10} "
          f"{'TTFT mean s':>11} {'hit rate':>9} {'doc hits':>9} {'share of bound':>15}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--thresholds", nargs="+", type=int, default=[1, 2, 3])
    parser.add_argument("--tenants", type=int, default=8)
    parser.add_argument("--max-docs", type=int, default=2)
    parser.add_argument("--max-words", type=int, default=900)
    parser.add_argument("--out", type=Path, default=Path("results/publish_threshold.png"))
    args = parser.parse_args()
    documents = load_documents("default", project_data_dir(), args.max_docs)
    if args.tenants < 2 or args.tenants % 2:
        parser.error(f"--tenants must be an even number >= 2, got {args.tenants}")
    # NOTE: each question asked by two tenants: the default documents have five questions.
    requests = build_requests(documents, WorkloadConfig(
        num_tenants=args.tenants, max_document_words=args.max_words,
        queries_per_document=args.tenants // 2, tenants_per_query=2))
    model, tokenizer = load_default()
    policy = load_policy()
    systems = {REFERENCE: EngineConfig(mode="no_sharing")}
    for k in args.thresholds:
        systems[f"k={k}"] = EngineConfig(mode="cacheprune", publish_mode="isolated",
                                         publish_threshold=k)
    results = run_systems(systems, model, tokenizer, policy, requests,
                          SamplingParams(max_new_tokens=16), 0, attacked=())
    compare_with_reference(results)
    reference = next(r for r in results if r.name == REFERENCE).summary()
    print(f"\n{len(requests)} requests over {len(documents)} documents, {args.tenants} tenants "
          f"each; {REFERENCE}: TTFT median {reference['ttft_median_s']:.2f} s (the baseline's "
          f"absolute time)\n\n{HEADER}")
    for k in args.thresholds:
        result = next(r for r in results if r.name == f"k={k}")
        s = result.summary()
        share = share_of_bound(_bound(model, tokenizer, policy, requests, k),
                               {q.request_id: q.ttft_s for q in result.requests})
        before = result.requests_before_reuse().values()
        warm = sum(q.document_seen_before for q in result.requests)
        print(f"{k:>3} {', '.join('-' if n is None else str(n) for n in before):>13} "
              f"{warm:>5} {s.get('paired_speedup_warm', 0.0):7.2f}x "
              f"{s['ttft_median_s']:10.2f} {s['ttft_mean_s']:11.2f} {s['hit_rate']:9.1%} "
              f"{s['document_hit_rate_warm']:9.1%} "
              f"{'-' if share is None else f'{share:.0%}':>15}")
    _plot(results, args.out)
    print(f"\nplot: {args.out}")


def _bound(model: Transformer, tokenizer: ChatTokenizer, policy: DetectionPolicy,
           requests: list[Request], k: int) -> Bound:
    """The oracle bound of each warm request under threshold k, served in order."""
    bound = OracleBound(model, tokenizer, policy, threshold=k)
    senders = DocumentSenders()
    for request in requests:
        bound.serve(request, warm=senders.before(request) >= k)
        senders.add(request)
    return bound.records


def _plot(results: list[SystemResult], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    path.parent.mkdir(parents=True, exist_ok=True)
    fig, ax = plt.subplots(figsize=(10, 4.5))
    for result in results:
        ax.plot([q.ttft_s for q in result.requests], marker="o", label=result.name)
    ax.set_xlabel("request, in arrival order")
    ax.set_ylabel("TTFT (s)")
    ax.set_title("TTFT per request: no sharing and isolated mode at each threshold k")
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


if __name__ == "__main__":
    main()
