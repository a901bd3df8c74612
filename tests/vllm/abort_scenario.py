"""Abort a request mid-decode in a vLLM engine with the connector; print the pool's state.

Usage: python abort_scenario.py MODEL_FOLDER POOL_DIR ENGINE_ARGS_JSON PROMPT_JSON
Prints one line `RESULT {...}`: the staged/entry/lease files seen before and after the abort.
A script, so that the abort test has an engine of its own (steps driven by hand).
"""

from __future__ import annotations

import json
import os
import sys
import time


def listing(pool_dir: str) -> dict[str, int]:
    return {name: len(os.listdir(os.path.join(pool_dir, name)))
            for name in ("staging", "entries", "leases")}


def main() -> None:
    from vllm import LLM, SamplingParams

    folder, pool_dir = sys.argv[1], sys.argv[2]
    engine_args, prompt = json.loads(sys.argv[3]), json.loads(sys.argv[4])
    # The short name alone: vLLM finds the connector through cacheprune's entry point.
    config = {"kv_connector": "CachePruneConnector", "kv_role": "kv_both",
              "kv_connector_extra_config": {"pool_dir": pool_dir}}
    llm = LLM(folder, kv_transfer_config=config, **engine_args)
    engine = llm.llm_engine
    # EOS ignored: the request must still be running when it is aborted.
    engine.add_request("abort-me", prompt,
                       SamplingParams(temperature=0.0, max_tokens=200, ignore_eos=True))
    for _ in range(20):  # prefill, then a few decode steps
        engine.step()
        if listing(pool_dir)["staging"] or not engine.has_unfinished_requests():
            break
    before = listing(pool_dir)
    engine.abort_request(["abort-me"])
    deadline = time.monotonic() + 30  # the engine core ends the request asynchronously
    while listing(pool_dir)["staging"] and time.monotonic() < deadline:
        time.sleep(0.1)
    print("RESULT " + json.dumps({"before": before, "after": listing(pool_dir)}), flush=True)


if __name__ == "__main__":
    main()
