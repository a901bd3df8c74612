"""vLLM benchmark: TTFT of tenant B right after tenant A sent the same public document with
different private details, for three set-ups measured in one run, on two workloads:

- profile-first:  private profile, then the document (~1,500 words), then a question: the
                  product's case, where plain prefix caching stops after a few tokens;
- document-first: the document, then a question holding private details.

Set-ups, each in its own process (one vLLM engine each), all bound to the same cores
(`VLLM_CPU_NUM_OF_RESERVED_CPU`, which vLLM-CPU otherwise raises by one with a connector):
- cacheprune: the CachePruneConnector, tenants salted (B reuses A's non-private segments);
- salted:     plain vLLM, one cache_salt per tenant (isolation: B computes everything);
- unsalted:   plain vLLM, no salt (B hits A's blocks in vLLM's prefix cache: unsafe).

Every repeat uses a fresh document variant. TTFT is the wall time of a generate() call for
one token. With the connector, B is sent once A's segments are published (A's publication
runs in the engine after A's first token); the share of B's document tokens the pool served
comes from the connector's request log, over the document tokens its detection policy leaves
public. The pool lives in /dev/shm and is removed at the end.

    python benchmarks/vllm_ttft.py [--repeats 3] [--doc-tokens 2000]
"""

from __future__ import annotations

import argparse
import json
import os
import secrets
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from vllm_load import tagged  # noqa: E402

ENV = {"VLLM_CPU_KVCACHE_SPACE": "1", "HF_HUB_OFFLINE": "1",
       # NOTE: spawn, not fork: a forked vLLM worker inherits numba/llvmlite, which breaks
       # vLLM-CPU's kernel scan at start-up (see docs/vllm.md).
       "VLLM_WORKER_MULTIPROC_METHOD": "spawn",
       # NOTE: the same cores for every set-up: vLLM-CPU reserves one more core for itself
       # when a KV connector is configured.
       "VLLM_CPU_NUM_OF_RESERVED_CPU": "1"}
DOCUMENTS = Path(__file__).resolve().parent.parent / "datasets" / "default" / \
    "default_grouped.jsonl"
TENANTS = {"a": ("Alice Moreau", "alice.moreau@example.com", "415-555-0142"),
           "b": ("Bob Okafor", "bob.okafor@example.org", "212-555-0199")}
QUESTION = "Question: who keeps the official copy of the handbook?"
WORKLOADS = ("profile-first", "document-first")


def public_document(tokenizer, num_tokens: int, variant: str) -> str:
    """About `num_tokens` tokens of the repo's default documents (public text), tagged with
    `variant` (`vllm_load.tagged`), so that no repeat finds an earlier repeat's segments in the
    pool."""
    contexts = [json.loads(line)["context"] for line in DOCUMENTS.read_text().splitlines()]
    text, index = "", 0
    while len(tokenizer.encode(text).ids) < num_tokens:
        text += tagged(contexts[index % len(contexts)], variant) + "\n\n"
        index += 1
    return text[:tokenizer.encode(text).offsets[num_tokens - 1][1]]


def prompt(workload: str, tenant: str, document: str) -> str:
    name, email, phone = TENANTS[tenant]
    if workload == "profile-first":
        return (f"You answer questions for {name}, e-mail {email}, phone {phone}.\n\n"
                f"Document:\n{document}\n\n{QUESTION} Answer:")
    return f"{document}\n\nI am {name} ({email}). {QUESTION} Answer:"


def log_events(path: Path, event: str) -> list[dict]:
    if not path.exists():
        return []
    return [e for e in map(json.loads, path.read_text().splitlines()) if e["event"] == event]


def run_setup(setup: str, repeats: int, doc_tokens: int, work_dir: Path) -> None:
    """One engine; prints a JSON line per measurement."""
    from vllm import LLM, SamplingParams

    from cacheprune.detectors import load_policy
    from cacheprune.models import converted_folder, load_tokenizer
    from cacheprune.vllm import kv_transfer_config

    folder = str(converted_folder())
    tokenizer = load_tokenizer(folder)
    policy = load_policy(None)
    request_log = work_dir / "requests.jsonl"
    extra = {}
    if setup == "cacheprune":
        # NOTE: publish_threshold=1: B reuses what A alone sent, the mechanism's speed; what
        # waiting for k tenants costs is benchmarks/publish_threshold.py's to measure.
        extra["kv_transfer_config"] = kv_transfer_config(
            pool_url=f"file://{work_dir / 'pool'}", pool_budget_bytes=1 << 30,
            request_log=str(request_log), publish_threshold=1)
    llm = LLM(folder, dtype="float32", enforce_eager=True, max_model_len=4096, seed=0,
              **extra)
    one_token = SamplingParams(temperature=0.0, max_tokens=1)

    def ttft(text: str, salt: str | None) -> tuple[float, int, list[list[int]]]:
        request: dict[str, str] = {"prompt": text}
        if salt is not None:
            request["cache_salt"] = salt
        logged = len(log_events(request_log, "prefill"))
        start = time.perf_counter()
        output = llm.generate([request], one_token, use_tqdm=False)[0]
        seconds = time.perf_counter() - start
        spans = [span for line in log_events(request_log, "prefill")[logged:]
                 for span in line["reused_spans"]]
        return seconds, int(output.num_cached_tokens or 0), spans

    ttft(prompt("profile-first", "a", public_document(tokenizer, 300, "warm-up")), "warm-up")
    modes = ["cacheprune"] if setup == "cacheprune" else ["salted", "unsalted"]
    for workload in WORKLOADS:
        for repeat in range(repeats):
            for mode in modes:
                document = public_document(tokenizer, doc_tokens, f"{workload}-{repeat}-{mode}")
                salts = (None, None) if mode == "unsalted" else (f"a{repeat}", f"b{repeat}")
                a_seconds, _, _ = ttft(prompt(workload, "a", document), salts[0])
                if mode == "cacheprune":
                    # B comes once A's segments are in the pool: once every prefilled request's
                    # publication is settled (a later settling of an earlier request must not
                    # count as A's).
                    deadline = time.monotonic() + 300
                    while len(log_events(request_log, "settled")) \
                            < len(log_events(request_log, "prefill")) \
                            and time.monotonic() < deadline:
                        time.sleep(0.1)
                b_prompt = prompt(workload, "b", document)
                b_seconds, b_cached, b_spans = ttft(b_prompt, salts[1])
                start = b_prompt.index(document)
                offsets = tokenizer.encode(b_prompt).offsets
                private = policy.mask(b_prompt, offsets).mask  # the connector's own policy
                in_document = {i for i, (a, b) in enumerate(offsets)
                               if a >= start and b <= start + len(document) and not private[i]}
                b_served = sum(1 for first, end in b_spans for i in range(first, end)
                               if i in in_document)
                doc_tokens_in_b = len(in_document)
                print(json.dumps({"workload": workload, "mode": mode, "a_s": a_seconds,
                                  "b_s": b_seconds, "b_cached": b_cached,
                                  "b_pool_tokens": b_served, "b_doc_tokens": doc_tokens_in_b,
                                  "prompt_tokens": len(tokenizer.encode(b_prompt).ids),
                                  "doc_words": len(document.split())}), flush=True)


def measure(setup: str, repeats: int, doc_tokens: int, work_dir: Path) -> list[dict]:
    command = [sys.executable, __file__, "--setup", setup, "--repeats", str(repeats),
               "--doc-tokens", str(doc_tokens), "--work-dir", str(work_dir)]
    done = subprocess.run(command, env={**os.environ, **ENV}, capture_output=True, text=True,
                          check=False)
    if done.returncode != 0:
        sys.exit(f"{setup} run failed:\n{done.stderr[-4000:]}")
    return [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]


def report(rows: list[dict], workload: str, repeats: int) -> None:
    rows = [r for r in rows if r["workload"] == workload]
    modes = ("cacheprune", "salted", "unsalted")
    median = {m: statistics.median(r["b_s"] for r in rows if r["mode"] == m) for m in modes}
    cached = {m: statistics.median(r["b_cached"] for r in rows if r["mode"] == m) for m in modes}
    first = rows[0]
    print(f"\n{workload}: tenant B's TTFT, {first['prompt_tokens']}-token prompt "
          f"({first['doc_words']}-word document), median of {repeats}:")
    first_ttft = {m: statistics.median(r["a_s"] for r in rows if r["mode"] == m) for m in modes}
    print(f"{'set-up':<12}{'TTFT s':>9}{'cached tokens':>15}{'salted / this':>15}"
          f"{'A (first) s':>13}")
    for mode, seconds in median.items():
        print(f"{mode:<12}{seconds:>9.3f}{cached[mode]:>15.0f}"
              f"{median['salted'] / seconds:>14.2f}x{first_ttft[mode]:>13.3f}")
    ratio = median["salted"] / median["cacheprune"]
    ours = [r for r in rows if r["mode"] == "cacheprune"]
    share = statistics.median(r["b_pool_tokens"] / r["b_doc_tokens"] for r in ours)
    print(f"cacheprune vs salted prefix caching: {ratio:.2f}x lower TTFT (target >= 3x: "
          f"{'met' if ratio >= 3 else 'NOT met'}); B's non-private document tokens served from "
          "the pool: "
          f"{share:.1%} (target >= 95%: {'met' if share >= 0.95 else 'NOT met'})")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--doc-tokens", type=int, default=2000)
    parser.add_argument("--setup", choices=["cacheprune", "plain"], help=argparse.SUPPRESS)
    parser.add_argument("--work-dir", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.setup:
        run_setup(args.setup, args.repeats, args.doc_tokens, args.work_dir)
        return
    shm = "/dev/shm" if os.path.isdir("/dev/shm") else None
    work_dir = Path(tempfile.mkdtemp(prefix="cacheprune-bench-", dir=shm))
    os.environ.setdefault("CACHEPRUNE_POOL_KEY", secrets.token_hex(32))
    try:
        rows = measure("cacheprune", args.repeats, args.doc_tokens, work_dir) + \
            measure("plain", args.repeats, args.doc_tokens, work_dir)
    finally:
        shutil.rmtree(work_dir, ignore_errors=True)  # the pool and the request log
    for workload in WORKLOADS:
        report(rows, workload, args.repeats)


if __name__ == "__main__":
    main()
