"""Share of the eval's private values (Faker, many locales) the default policy fully masks.

    PYTHONPATH=. python benchmarks/eval_values_masked.py DATASET DATA_DIR [--seeds 4,5,6,7] \
        [--docs-per-seed 10]

Each seed builds the eval's workload (4 tenants, 6 queries per document, 900 words) over its own
documents; a value is fully masked when every token holding one of its characters is private
(`eval.masked.fully_masked_slots`, as the report counts it). Misses are listed with context.
"""

from __future__ import annotations

import argparse
from collections import Counter

import numpy as np

from cacheprune.detectors import load_policy
from cacheprune.models import converted_folder, load_tokenizer
from cacheprune.serving import render_prompt
from eval.data import load_documents
from eval.masked import fully_masked_slots
from eval.workload import WorkloadConfig, build_requests


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("dataset")
    parser.add_argument("data_dir")
    parser.add_argument("--seeds", default="4,5,6,7")
    parser.add_argument("--docs-per-seed", type=int, default=10)
    args = parser.parse_args()
    tokenizer = load_tokenizer(str(converted_folder()))
    policy = load_policy(None)
    documents = load_documents(args.dataset, args.data_dir)
    masked, total = Counter[str](), Counter[str]()
    for seed in (int(s) for s in args.seeds.split(",")):
        start = seed * args.docs_per_seed
        chosen = documents[start:start + args.docs_per_seed] or documents[:args.docs_per_seed]
        config = WorkloadConfig(num_tenants=4, seed=seed, max_document_words=900,
                                queries_per_document=6)
        for request in build_requests(chosen, config):
            text, spans = render_prompt(tokenizer, request.messages, request.private_char_spans)
            mask = np.asarray(policy.mask(text, tokenizer.encode(text).offsets).mask, dtype=bool)
            for (slot, ok), (s, e) in zip(fully_masked_slots(tokenizer, request, mask).items(),
                                          spans, strict=True):
                kind = request.slots[slot].kind
                total[kind] += 1
                masked[kind] += ok
                if not ok:
                    context = text[max(0, s - 40):e + 20]
                    print(f"seed {seed} {kind:12} {text[s:e]!r}  in {context!r}")
    print(f"\n{'kind':14}{'values':>8}{'fully masked':>14}")
    for kind in sorted(total):
        print(f"{kind:14}{total[kind]:>8}{masked[kind] / total[kind]:>14.1%}")
    print(f"{'all':14}{total.total():>8}{masked.total() / total.total():>14.1%}")


if __name__ == "__main__":
    main()
