"""Warm requests against the oracle bound, side by side: for each warm request of one document,
the engine's TTFT and the bound's (the cheapest prefill: only what no sharing scheme could
serve is computed), the rows each computed, and where the engine's time went (cProfile, by
function, as shares of the last warm request's `Engine.generate` call, which includes the
publishing after the answer: isolated mode's private-free pass shows as `attend_and_capture`
there; compare costs, not seconds, on a busy machine).

  PYTHONPATH=. python benchmarks/warm_vs_bound.py [--tenants 5] [--publish-mode isolated]
  PYTHONPATH=. python benchmarks/warm_vs_bound.py --max-words 1500 --tenants 6 --publish-threshold 3
  PYTHONPATH=. python benchmarks/warm_vs_bound.py --dataset qasper --data-dir DATA --min-words 3000
"""

from __future__ import annotations

import argparse
import cProfile
import pstats
import statistics
from pathlib import Path

from cacheprune.detectors import load_policy
from cacheprune.engine import load_default
from cacheprune.serving import Engine, EngineConfig, SamplingParams
from eval.bound import OracleBound
from eval.data import load_documents, project_data_dir
from eval.workload import WorkloadConfig, build_requests

# Functions whose share of a warm request's TTFT is printed (cumulative time, substrings).
STAGES = ("render_chat", "encode", "mask_text", "lookup", "plan", "move_keys",
          "attend_and_capture", "scaled_dot_product_attention", "linear")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--dataset", default="default")
    parser.add_argument("--data-dir", type=Path, default=None)
    parser.add_argument("--min-words", type=int, default=0)
    parser.add_argument("--max-words", type=int, default=None,
                        help="cut the document to this many words (the demo uses 1500)")
    parser.add_argument("--tenants", type=int, default=5)
    parser.add_argument("--publish-threshold", type=int, default=1,
                        help="k, for the engine and the bound: the first k requests are cold")
    parser.add_argument("--publish-mode", choices=("isolated", "paper_baseline"),
                        default="isolated")
    args = parser.parse_args()

    documents = [d for d in load_documents(args.dataset, args.data_dir or project_data_dir())
                 if d.num_words >= args.min_words][:1]
    requests = build_requests(documents, WorkloadConfig(
        num_tenants=args.tenants, max_document_words=args.max_words, queries_per_document=1,
        tenants_per_query=args.tenants))
    model, tokenizer = load_default()
    policy = load_policy()
    one_token = SamplingParams(max_new_tokens=1)
    # NOTE: k = 1 by default, in the engine and the bound: every request after the first is
    # warm (benchmarks/publish_threshold.py compares values of k).
    k = args.publish_threshold
    # Compile the numba kernels (rolling hash, cover, annotator) before anything is timed.
    config = EngineConfig(publish_mode=args.publish_mode, publish_threshold=k)
    warm_up = Engine(model, tokenizer, policy, config)
    for request in requests[:k + 1]:  # the last one reuses
        warm_up.generate(request.tenant, request.messages, one_token)
    engine = Engine(model, tokenizer, policy, config)
    bound = OracleBound(model, tokenizer, policy, threshold=k)
    profile = cProfile.Profile()
    shares = []
    print(f"{documents[0].doc_id}: {documents[0].num_words} words, {len(requests)} requests")
    print("request  tokens  engine TTFT  rows  bound TTFT  rows  bound/engine")
    for i, request in enumerate(requests):
        if i == len(requests) - 1:
            profile.enable()
        record = engine.generate(request.tenant, request.messages, one_token)
        profile.disable()
        floor = bound.serve(request, warm=i >= k)
        if floor is None:
            continue
        stats = record.stats
        rows = stats.num_computed + stats.num_recomputed
        shares.append(floor.ttft_s / stats.ttft_s)
        print(f"{i:7d}  {stats.num_prompt_tokens:6d}  {stats.ttft_s:10.3f}s  {rows:4d}  "
              f"{floor.ttft_s:9.3f}s  {floor.num_computed:4d}  {shares[-1]:11.0%}")
    print(f"median share of the bound: {statistics.median(shares):.0%}")
    # Where the last warm request's time went.
    table = pstats.Stats(profile).stats  # type: ignore[attr-defined]
    total = max(cumulative for _, _, _, cumulative, _ in table.values())
    print("last warm request, share of its generate() time (cumulative, overlapping):")
    for stage in STAGES:
        cumulative = sum(entry[3] for (_, _, name), entry in table.items() if stage in name)
        print(f"  {stage:32s} {cumulative / total:6.1%}")


if __name__ == "__main__":
    main()
