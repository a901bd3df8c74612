"""The pool across machines: two processes, one Valkey server on loopback, ratios side by side.

1. Two processes as two machines, each its own engine on the default model: tenant A (process 1)
   asks about a document (the first `--words` words of a shipped one), with private details
   before it; then tenant B (process 2, started after process 1 has exited) asks about the
   same document with other private details. Printed: the share of the document's tokens B
   reuses from A, and B's TTFT with the shared pool against no sharing (same process, warm).
2. Reading a 2,048-token segment of the default model's KV from Valkey, against recomputing it.
3. Lookup of an 8k-token request against N pooled entries: Valkey and memory:// side by side.

Targets: B reuses >= 95% of the document tokens with TTFT >= 3x lower; the read <= 10% of the
recompute; lookup <= 20 ms at 100k entries; memory:// as fast as benchmarks/pool_lookup.py.
Run: python benchmarks/pool_backends.py [--entries 100000] [--words 1500]
"""

from __future__ import annotations

import argparse
import json
import os
import secrets
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path

import numpy as np
import torch
from pool_lookup import (
    REQUEST_TOKENS,
    fill_pool,
    make_config,
    make_request,
    make_segments,
    time_lookup,
)

from cacheprune.pool import EntryIdentity, KVShape, PoolConfig, Scope, open_pool
from cacheprune.pool.local_valkey import LocalValkey

REPEATS = 3
PROFILES = {
    "tenant-a": "My name is Alice Moreau, account 4417-2290, e-mail alice.moreau@example.com.",
    "tenant-b": "I am Bruno Keller (bruno.keller@example.org), client number 8812-0031.",
}


def serve_one(role: str, url: str, num_words: int) -> dict[str, float]:
    """One process: an engine on `url`; tenant A publishes, or tenant B is measured."""
    from cacheprune.serving import Engine, EngineConfig, SamplingParams
    from eval.data import load_documents, project_data_dir
    from eval.workload import truncate_text

    first, second = (replace(document, context=truncate_text(document.context, num_words, None))
                     for document in load_documents("default", project_data_dir(), 2)[:2])
    sampling = SamplingParams(max_new_tokens=1)

    def prompt(tenant: str, document: str) -> str:
        return f"{PROFILES[tenant]}\n\n{document}\n\nQuestion: what is this text about?"

    # NOTE: k = 1: the second process reuses what the first alone sent (the threshold's cost is
    # benchmarks/publish_threshold.py's to measure).
    shared = Engine.from_default(EngineConfig(pool_url=url, publish_threshold=1))
    shared.generate(role, prompt(role, second.context), sampling)  # warm-up, another document
    if role == "tenant-a":
        record = shared.generate(role, prompt(role, first.context), sampling)
        return {"published_tokens": record.num_published_tokens}
    alone = Engine(shared.model, shared.tokenizer, shared.policy,
                   EngineConfig(mode="no_sharing"))
    alone.generate(role, prompt(role, second.context), sampling)
    # Alternating, medians of REPEATS: B's later requests are served from A's entries as well.
    colds, warms = [], []
    for _ in range(REPEATS):
        colds.append(alone.generate(role, prompt(role, first.context), sampling))
        warms.append(shared.generate(role, prompt(role, first.context), sampling))
    warm = warms[0]
    # The document's tokens in B's prompt: after the profile line, before the question.
    start = len(shared.tokenizer.encode(f"{PROFILES[role]}\n\n").ids)
    end = start + len(shared.tokenizer.encode(first.context).ids)
    in_document = sum(max(0, min(stop, end) - max(begin, start))
                      for begin, stop in warm.hit_spans)
    return {"reused": in_document / (end - start), "document_tokens": end - start,
            "document_words": first.num_words,
            "ttft_shared_s": statistics.median(r.stats.ttft_s for r in warms),
            "ttft_alone_s": statistics.median(r.stats.ttft_s for r in colds)}


def two_machines(url: str, num_words: int) -> dict[str, float]:
    results = {}
    for role in ("tenant-a", "tenant-b"):
        # The child reads the shipped workload through the eval package at the project's root.
        env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parent.parent)}
        done = subprocess.run([sys.executable, __file__, "--role", role, "--url", url,
                               "--words", str(num_words)],
                              capture_output=True, text=True, env=env)
        if done.returncode != 0:
            sys.exit(f"the {role} process failed:\n{done.stderr[-3000:]}")
        results.update(json.loads(done.stdout.strip().splitlines()[-1]))
    return results


def read_against_recompute(url: str, num_tokens: int = 2048) -> tuple[float, float]:
    from cacheprune.engine import PrefillPlan, load_default

    model, _ = load_default()
    shape = KVShape(model.config.num_layers, model.config.num_kv_heads, model.config.head_dim)
    config = PoolConfig(kv_shape=shape, budget_bytes=2 * num_tokens * shape.entry_bytes_per_token,
                        max_context_tokens=num_tokens, min_entry_tokens=64,
                        anchor_stride=None)  # one entry read from its first token
    pool = open_pool(url, config)
    who = Scope(EntryIdentity.for_shape("bench-model", "bench-policy", shape), "bench")
    tokens = np.random.default_rng(1).integers(0, 49152, num_tokens)
    with torch.no_grad():
        start = time.perf_counter()
        result = model.prefill(PrefillPlan.full(torch.from_numpy(tokens)))
        recompute_s = time.perf_counter() - start
    flags = np.zeros(num_tokens, dtype=bool)
    with pool.session("publisher", who) as session:
        session.stage(tokens, result.keys, result.values, np.arange(num_tokens), flags, flags)
        session.commit()
    times = []
    for _ in range(3):
        with pool.session("reader", who) as session:
            start = time.perf_counter()
            (match,) = session.lookup(tokens, flags)
            assert session.read(match) is not None
            times.append(time.perf_counter() - start)
    return statistics.median(times), recompute_s


def lookups(url: str, num_entries: int) -> tuple[float, float]:
    rng = np.random.default_rng(0)
    segments = make_segments(rng, num_entries)
    tokens, mask = make_request(rng, segments)
    medians = []
    for where in (url, "memory://"):
        pool = open_pool(where, make_config(segments))
        fill_pool(pool, segments)
        time_lookup(pool, tokens, mask, 2)
        medians.append(time_lookup(pool, tokens, mask, 7)[0])
    return medians[0], medians[1]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--entries", type=int, default=100_000)
    parser.add_argument("--words", type=int, default=1500,
                        help="the document is the first WORDS words of a shipped one")
    parser.add_argument("--role", choices=sorted(PROFILES), help=argparse.SUPPRESS)
    parser.add_argument("--url", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.words < 1:
        parser.error(f"--words must be at least 1, got {args.words}")
    if args.role:
        print(json.dumps(serve_one(args.role, args.url, args.words)))
        return
    os.environ.setdefault("CACHEPRUNE_POOL_KEY", secrets.token_hex(32))
    with tempfile.TemporaryDirectory() as folder, \
            LocalValkey(folder, port=16379 + secrets.randbelow(1000)) as server:
        url = server.url
        machines = two_machines(url, args.words)
        print(f"two processes over Valkey on loopback, a {machines['document_words']:,.0f}-word"
              f" document ({machines['document_tokens']:,.0f} tokens): tenant B reused "
              f"{machines['reused']:.1%} of the document tokens tenant A published "
              "(target >= 95%)")
        ratio = machines["ttft_alone_s"] / machines["ttft_shared_s"]
        print(f"  TTFT (medians of {REPEATS}) no sharing {machines['ttft_alone_s']:.3f} s | "
              f"shared pool {machines['ttft_shared_s']:.3f} s | ratio {ratio:.1f}x (target >= 3x)",
              flush=True)
        read_s, recompute_s = read_against_recompute(url)
        print(f"2,048-token segment: read from Valkey {read_s:.3f} s | recompute "
              f"{recompute_s:.3f} s | read / recompute {read_s / recompute_s:.1%} "
              "(target <= 10%)", flush=True)
        valkey_ms, memory_ms = (1e3 * t for t in lookups(url, args.entries))
        print(f"lookup, {REQUEST_TOKENS}-token request, {args.entries} entries: Valkey "
              f"{valkey_ms:.1f} ms (target <= 20) | memory:// {memory_ms:.1f} ms "
              "(pool_lookup.py's figure)")

if __name__ == "__main__":
    main()
