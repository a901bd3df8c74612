"""Plain vLLM (no connector, no salt): greedy token ids (EOS ignored) for the prompts read
from stdin as a JSON list.
Usage: python plain_reference.py MODEL_FOLDER MAX_TOKENS ENGINE_ARGS_JSON"""

from __future__ import annotations

import json
import sys


def main() -> None:
    from vllm import LLM, SamplingParams

    folder, max_tokens, engine_args = sys.argv[1], int(sys.argv[2]), json.loads(sys.argv[3])
    prompts = json.loads(sys.stdin.read())
    llm = LLM(folder, **engine_args)
    outputs = llm.generate(prompts, SamplingParams(temperature=0.0, max_tokens=max_tokens,
                                                          ignore_eos=True),
                           use_tqdm=False)
    print("RESULT " + json.dumps([list(output.outputs[0].token_ids) for output in outputs]))


if __name__ == "__main__":
    main()
