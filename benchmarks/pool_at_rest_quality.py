"""KV stored at rest in bfloat16 / float16 against float32, on the real default model.

For each of the shipped default workload's documents: the document's KV (computed alone, at
positions 0..d-1) goes through a real `file://` pool in each stored dtype and comes back as
the reused prefix of "document + question"; the question's tokens are computed over it.
Printed per stored dtype: bytes per token at rest, the max |logit difference| against the
same reuse through float32 storage (over every question position), and greedy agreement (the
share of question positions whose argmax equals float32's). Target: max difference <= 1e-2.
Run: python benchmarks/pool_at_rest_quality.py [--docs 3] [--doc-tokens 768]
"""

from __future__ import annotations

import argparse
import os
import secrets
import tempfile

import numpy as np
import torch

from cacheprune.engine import load_default
from cacheprune.engine.plan import PrefillPlan, ReusedSpan
from cacheprune.pool import EntryIdentity, KVShape, PoolConfig, Scope, open_pool
from eval.data.loader import load_documents, project_data_dir

DTYPES = ("float32", "bfloat16", "float16")


def through_pool(folder: str, dtype: str, shape: KVShape, max_context: int,
                 tokens: np.ndarray, keys: torch.Tensor, values: torch.Tensor
                 ) -> tuple[torch.Tensor, torch.Tensor, int]:
    """Keys and values after a publish and a read through a file pool storing `dtype`, and
    the entry's size on disk."""
    config = PoolConfig(kv_shape=shape, budget_bytes=4 * max_context *
                        shape.entry_bytes_per_token, max_context_tokens=max_context,
                        min_entry_tokens=64, kv_storage_dtype=dtype)
    pool = open_pool(f"file://{folder}/{dtype}", config, pool_key=secrets.token_hex(32))
    who = Scope(EntryIdentity.for_shape("smollm2", "bench", shape), "tenant-a")
    flags = np.zeros(len(tokens), dtype=bool)
    with pool.session("publisher", who) as session:
        session.stage(tokens, keys, values, np.arange(len(tokens)), flags, flags)
        session.commit()
    (name,) = session.published
    size = os.path.getsize(f"{folder}/{dtype}/entries/{name}")
    with pool.session("reader", who) as session:
        (match,) = session.lookup(tokens, flags)
        part = session.read(match)
    assert part is not None
    return part.keys, part.values, size


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--docs", type=int, default=3)
    parser.add_argument("--doc-tokens", type=int, default=768)
    args = parser.parse_args()
    model, tokenizer = load_default()
    config = model.config
    shape = KVShape(config.num_layers, config.num_kv_heads, config.head_dim)
    results: dict[str, list[tuple[float, float, float]]] = {d: [] for d in DTYPES}
    documents = load_documents("default", project_data_dir(), max_docs=args.docs)
    with tempfile.TemporaryDirectory() as folder:
        for number, document in enumerate(documents):
            doc_ids = tokenizer.encode(document.context).ids[: args.doc_tokens]
            question = document.queries[0].question if document.queries else "Summarize it."
            question_ids = tokenizer.encode("\nQuestion: " + question + "\nAnswer:").ids
            prompt = torch.tensor(doc_ids + question_ids)
            alone = model.prefill(PrefillPlan.full(torch.tensor(doc_ids)))
            keys = alone.kv.keys[:, :, : len(doc_ids)].clone()
            values = alone.kv.values[:, :, : len(doc_ids)].clone()
            logits = {}
            os.makedirs(f"{folder}/{number}", mode=0o700)
            for dtype in DTYPES:
                read_keys, read_values, size = through_pool(
                    f"{folder}/{number}", dtype, shape, config.max_context,
                    np.asarray(doc_ids), keys, values)
                span = ReusedSpan(0, read_keys, read_values, torch.arange(len(doc_ids)))
                result = model.prefill(PrefillPlan(prompt, [span]), all_logits=True)
                logits[dtype] = (result.logits, size / len(doc_ids))
            reference = logits["float32"][0]
            for dtype in DTYPES:
                got, per_token = logits[dtype]
                difference = float((got - reference).abs().max())
                agreement = float((got.argmax(-1) == reference.argmax(-1)).float().mean())
                results[dtype].append((per_token, difference, agreement))
    print(f"{len(documents)} documents, {args.doc_tokens} document tokens each, reused; "
          "the question computed")
    print(f"{'stored':<9} {'bytes/token':>11} {'vs float32':>10} {'max |dlogit|':>12} "
          f"{'greedy agreement':>16}")
    base = np.mean([r[0] for r in results["float32"]])
    for dtype in DTYPES:
        rows = results[dtype]
        per_token = float(np.mean([r[0] for r in rows]))
        print(f"{dtype:<9} {per_token:11.0f} {per_token / base:10.2f} "
              f"{max(r[1] for r in rows):12.2e} {np.mean([r[2] for r in rows]):16.1%}")


if __name__ == "__main__":
    main()
