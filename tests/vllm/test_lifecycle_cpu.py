"""Two vLLM instances on one pool; preemption and resumption, chunked prefill, a failing
prefill and an abort on real vLLM-CPU engines (run in `lifecycle_scenario.py`)."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from conftest import (
    ALICE,
    BOB,
    CARLA,
    ENGINE_ARGS,
    HERE,
    QUESTION,
    Tenant,
    plain_vllm_greedy,
    profile_first,
    public_document,
    shareable_document_tokens,
    subprocess_env,
    tokens_in,
)
from faulty_connector import FAULTY_TENANT

pytestmark = pytest.mark.slow
GREEDY_TOKENS = 200  # as in lifecycle_scenario.py
FAULTY = Tenant("Faye Ulto", FAULTY_TENANT, "faye.ulto@example.com", "718-555-0190")


# NOTE: no private value: cacheprune computes these cold prompts exactly as vLLM would (a
# cold prompt with one, the publication threshold's k-th, is published first and then blended
# from the pool: its first token need not be plain vLLM's).
UNSHARED_TEMPLATES = ("Reply for the client; notes follow:\n",
                      "Answer the question from this text:\n",
                      "Read what follows, then answer.\n")


def unshared_template(index: int) -> str:
    """An opening worded unlike `Tenant.profile` and unlike the other indexes: these prompts
    must have nothing to reuse."""
    return UNSHARED_TEMPLATES[index]


def test_lifecycle(model_folder, tmp_path, tokenizer):
    shared = public_document("two-instances")
    # The scenario sizes the second instance's cache to two of these and one block more, so
    # decoding them preempts. Words and a template no other prompt here holds: nothing to
    # reuse before resumption.
    concurrent = [(unshared_template(i) + public_document(
                       f"preempt-{i}", i, num_words=600, first_word=900) + QUESTION,
                   tenant.salt) for i, tenant in enumerate((ALICE, BOB, CARLA))]
    prompts = {
        "publish": (profile_first(ALICE, shared), ALICE.salt),
        "reuse": (profile_first(BOB, shared), BOB.salt),
        "concurrent": concurrent,
        "faulty": (profile_first(FAULTY, public_document("faulty")), FAULTY.salt),
        "unsalted": profile_first(CARLA, public_document("unsalted")),
        # NOTE: warm (the pool holds `shared`) with new text to publish after its prefill,
        # in the publisher thread, where an abort can come first; a cold prompt would be
        # published before its prefill (publish_first), whatever its end.
        "abort": (profile_first(CARLA, shared + "\n\n" + public_document(
            "abort", num_words=300)), CARLA.salt),
    }
    compared = [p for p, _ in concurrent] + [prompts["faulty"][0], prompts["unsalted"]]
    reference = plain_vllm_greedy(model_folder, compared, GREEDY_TOKENS)
    done = subprocess.run(
        [sys.executable, str(HERE / "lifecycle_scenario.py"), model_folder,
         str(tmp_path / "pool"), json.dumps(ENGINE_ARGS), json.dumps(prompts)],
        capture_output=True, text=True, env=subprocess_env(), timeout=900,
        check=False)
    assert done.returncode == 0, done.stderr[-4000:]
    (line,) = [x for x in done.stdout.splitlines() if x.startswith("RESULT ")]
    result = json.loads(line.removeprefix("RESULT "))

    # Instance 2 reused what instance 1 published, through the pool alone.
    shareable = shareable_document_tokens(tokenizer, prompts["reuse"][0], shared)
    assert tokens_in(result["reused_across_instances"], shareable) >= 0.95 * len(shareable)
    # Preempted requests were prefilled again on resumption and answered in full; their prompts
    # were longer than a step's token budget, which vLLM never had to chunk. Their first token
    # comes from the prefill, before any preemption: plain vLLM's. NOTE: after resumption a
    # request may reuse the segments it published itself while decoding (isolated KV, computed
    # without its profile): blended KV, by design, whose greedy continuation need not be plain
    # vLLM's, so only the first token is compared.
    assert result["preemptions"] > 0
    for answer, plain in zip(result["concurrent"], reference[:3], strict=True):
        assert len(answer) == GREEDY_TOKENS
        assert answer[0] == plain[0]
    # A failed prefill was recomputed by vLLM; a prompt vLLM chunked itself is unchanged.
    assert result["faulty"] == reference[3]
    assert result["unsalted"] == reference[4]
    # The request aborted before its segments were staged published none, and was settled
    # once; no lease or staged segment of any request (failed, preempted, aborted) is left.
    assert result["aborted_while_running"]
    assert result["settled_abort"] == [0]
    assert result["published_by_abort"] == 0
    assert result["left_in_pool"] == []
