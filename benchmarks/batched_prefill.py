"""A step's prefills one by one against one batched pass (`Engine.prefill_batch`, what the
vLLM connector's worker runs), on the same plans in one run: the load test's requests (a
tenant's private profile, then a shared ~1,300-word document, then a question), warm (the
document pooled, so each computes its profile and question only) and cold (nothing pooled).

    python benchmarks/batched_prefill.py [--batch-sizes 1,4,8] [--repeats 3] [--threads 1]

Printed per batch size: the best time of each over `--repeats` alternating runs, the ratio, and
the rows computed; one thread by default (the connector's worker on two cores has one).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
from vllm_load import QUESTION, documents, tenant_profile  # noqa: E402

from cacheprune.engine import PrefillPlan, SamplingParams  # noqa: E402
from cacheprune.serving import Engine, EngineConfig, admit  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batch-sizes", default="1,4,8")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--doc-words", type=int, default=1300)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    sizes = [int(size) for size in args.batch_sizes.split(",")]
    engine = Engine.from_default(EngineConfig(publish_threshold=1))
    document = documents(1, args.doc_words, "batched")[0]

    def prompt(index: int) -> str:
        return tenant_profile(index) + document + "\n\n" + QUESTION

    engine.generate("tenant-0", prompt(0), SamplingParams(max_new_tokens=1))  # publishes
    warm, cold = [], []
    for index in range(1, max(sizes) + 1):
        request = admit(f"req-{index}", f"tenant-{index}", prompt(index), engine.tokenizer,
                        engine.policy)
        with engine.session(request) as session:
            warm.append(engine.plan(request, session))
        cold.append(PrefillPlan(warm[-1].token_ids))
    print(f"{warm[0].num_tokens}-token prompts, {args.threads} thread(s), best of "
          f"{args.repeats}")
    print("| plans | batch size | rows computed | one by one | batched | one by one / batched |")
    print("|---|---:|---:|---:|---:|---:|")
    for name, plans in (("warm", warm), ("cold", cold)):
        for size in sizes:
            chosen = plans[:size]
            rows = sum(int(plan.compute_mask().sum()) for plan in chosen)
            alone, batched = [], []
            for _ in range(args.repeats):
                started = time.perf_counter()
                for plan in chosen:
                    engine.prefill(plan)
                alone.append(time.perf_counter() - started)
                started = time.perf_counter()
                engine.prefill_batch(chosen)
                batched.append(time.perf_counter() - started)
            print(f"| {name} | {size} | {rows} | {min(alone):.3f} s | {min(batched):.3f} s | "
                  f"{min(alone) / min(batched):.2f}x |")
        if name == "warm":
            sizes = [size for size in sizes if size <= 4]  # cold passes are long: fewer
    return 0


if __name__ == "__main__":
    sys.exit(main())
