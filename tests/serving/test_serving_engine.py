"""The whole request path on the default model: tenants share what is public, never what is
private, and sharing does not change answers where reuse is exact."""

from __future__ import annotations

import pytest

from cacheprune.detectors import load_policy
from cacheprune.serving import Engine, EngineConfig, SamplingParams

DOCUMENT = (
    "The Harbor Street library opens at nine in the morning and closes at six in the evening "
    "on weekdays. On Saturdays it opens at ten and closes at four. Members may borrow up to "
    "eight books at a time for three weeks, and renew each loan twice unless another member "
    "has reserved the book. Late returns cost twenty cents per book per day. The reading room "
    "on the second floor is quiet at all times, and group study rooms can be booked a week "
    "in advance at the front desk. "
) * 2
SYSTEM = "You answer questions about the library using only the text provided."
PRIVATE = {
    "a": "My e-mail is dana.reyes@example.org and my phone is +1 415 555 0142.",
    "b": "My e-mail is li.wei@corp.example and my phone is +44 20 7946 0018.",
}
PARAMS = SamplingParams(max_new_tokens=16)


def _messages(tenant: str, question: str = "When does the library close on Saturdays?"):
    return [
        {"role": "system", "content": SYSTEM},
        {"role": "user", "content": f"{DOCUMENT}\n\n{PRIVATE[tenant]} {question}"},
    ]


@pytest.fixture(scope="module")
def policy():
    return load_policy()


def _engine(default_model, policy, **config) -> Engine:
    model, tokenizer = default_model
    config.setdefault("publish_threshold", 1)  # these tests share from the first tenant on
    return Engine(model, tokenizer, policy, EngineConfig(**config))


def _pool_texts(engine: Engine) -> list[str]:
    return [engine.tokenizer.decode(ids.tolist()) for ids in engine.pool.stored_token_ids()]


def test_second_tenant_reuses_first_tenants_document(default_model, policy):
    engine = _engine(default_model, policy)
    first = engine.generate("a", _messages("a"), PARAMS)
    second = engine.generate("b", _messages("b"), PARAMS)
    assert first.num_hit_tokens == 0 and first.num_published_tokens > 0
    assert second.num_hit_tokens >= 0.9 * first.num_published_tokens
    assert second.stats.num_reused > 0
    # the document precedes every private token, so its reuse is exact prefix caching:
    # tenant b's answer must equal the answer computed without any sharing
    alone = _engine(default_model, policy, mode="no_sharing").generate("b", _messages("b"),
                                                                        PARAMS)
    assert second.text == alone.text


def test_pool_never_holds_private_text(default_model, policy):
    for publish_mode in ("isolated", "segment", "paper_baseline"):
        engine = _engine(default_model, policy, publish_mode=publish_mode)
        for tenant in ("a", "b"):
            messages = _messages(tenant)
            # private details before, inside and after the public document
            messages[1]["content"] = (f"{PRIVATE[tenant]}\n\n{DOCUMENT}\n{PRIVATE[tenant]}\n"
                                      f"{DOCUMENT}\n\nWhen does it open? {PRIVATE[tenant]}")
            record = engine.generate(tenant, messages, PARAMS)
            assert record.num_private > 0
        stored = _pool_texts(engine)
        assert stored, f"{publish_mode}: nothing was published"
        for text in stored:
            for secret in ("dana.reyes@example.org", "415 555 0142", "li.wei@corp.example",
                           "7946 0018", "example.org", "555"):
                assert secret not in text, f"{publish_mode}: pool holds {secret!r}"


def _probe_hits(engine: Engine, guess: str) -> int:
    """A prober who knows the template sends it with a guessed private value and reads the
    engine's reported hit count (the strongest timing oracle)."""
    messages = [
        {"role": "system", "content": SYSTEM},
        {"role": "user", "content": f"{DOCUMENT}\n\nMy account number is {guess}. "
                                    "When does the library close?"},
    ]
    return engine.generate("prober", messages, SamplingParams(max_new_tokens=1)).num_hit_tokens


@pytest.mark.parametrize("mode", ["cacheprune", "global_prefix"])
def test_prober_learns_nothing_from_cacheprune_and_something_from_global_cache(
    default_model, policy, mode
):
    secret = "48213907"
    engine = _engine(default_model, policy, mode=mode)
    victim = [
        {"role": "system", "content": SYSTEM},
        {"role": "user", "content": f"{DOCUMENT}\n\nMy account number is {secret}. "
                                    "When does the library close?"},
    ]
    engine.generate("victim", victim, PARAMS)
    right = _probe_hits(engine, secret[:4] + "0000")
    wrong = _probe_hits(engine, "9" + "0000000")
    if mode == "global_prefix":
        assert right > wrong, "the attack should work against the unsafe global cache"
    else:
        # positive control: the oracle does read real hits (the shared document)...
        assert wrong > 0, "the prober saw no hit at all: the oracle would prove nothing"
        # ...but none that depends on the private guess
        assert right == wrong, "cacheprune's hit count must not depend on the private guess"


def test_consecutive_requests_do_not_contaminate(default_model, policy):
    """Tenant a's long private prompt, then tenant b's short one: b's answer and hits hold
    nothing of a's, and equal what b gets from a fresh engine."""
    engine = _engine(default_model, policy)
    long_private = [{"role": "user", "content": (PRIVATE["a"] + " ") * 30 +
                     "Please repeat my e-mail address."}]
    engine.generate("a", long_private, PARAMS)
    short = [{"role": "user", "content": "What is two plus two?"}]
    after = engine.generate("b", short, PARAMS)
    fresh = _engine(default_model, policy).generate("b", short, PARAMS)
    # b reuses only the chat template's opening that both prompts start with (computed before
    # a's first private token, so exactly the KV b would compute): nothing of a's own text.
    tokenizer = engine.tokenizer
    a_ids = tokenizer.encode(tokenizer.render_chat(long_private)).ids
    b_ids = tokenizer.encode(tokenizer.render_chat(short)).ids
    common = next(i for i, (x, y) in enumerate(zip(a_ids, b_ids, strict=False)) if x != y)
    assert after.num_hit_tokens > 0
    assert all(end <= common for _, end in after.hit_spans)
    assert after.text == fresh.text
    assert "dana" not in after.text.lower()


def test_failure_mid_prefill_leaves_pool_untouched(default_model, policy, monkeypatch):
    engine = _engine(default_model, policy)
    engine.generate("a", _messages("a"), PARAMS)
    entries_before, bytes_before = engine.pool.num_entries, engine.pool.bytes_in_use

    def failing_prefill(*args, **kwargs):  # injected fault
        raise MemoryError("injected out-of-memory in the middle of a prefill")

    monkeypatch.setattr(engine.model, "prefill", failing_prefill)
    with pytest.raises(MemoryError):
        engine.generate("b", _messages("b", "A different question about the hours?"), PARAMS)
    monkeypatch.undo()
    assert engine.pool.num_leases == 0
    assert (engine.pool.num_entries, engine.pool.bytes_in_use) == (entries_before, bytes_before)


def test_bad_requests_are_refused_without_side_effects(default_model, policy):
    engine = _engine(default_model, policy)
    with pytest.raises(ValueError, match="tenant"):
        engine.generate("", "hello")
    with pytest.raises(ValueError, match="empty"):
        engine.generate("a", "")
    with pytest.raises(ValueError, match="outside message 0"):
        engine.generate("a", [{"role": "user", "content": "hi"}], public_ranges=[(0, 0, 99)])
    with pytest.raises(ValueError, match="mode must be one of"):
        EngineConfig(mode="everything")  # type: ignore[arg-type]
    assert engine.pool.num_entries == 0 and engine.pool.num_leases == 0


@pytest.mark.parametrize(("dtype", "element_bytes"), [("float16", 2), ("float32", 4)])
def test_the_engine_opens_its_pool_with_its_storage_settings(default_model, policy, tmp_path,
                                                             dtype, element_bytes):
    engine = _engine(default_model, policy, pool_url=f"file://{tmp_path / 'pool'}",
                     pool_key="engine-test-pool-key-0123456789", kv_storage_dtype=dtype,
                     recompute_tokens_per_s=1500.0)
    shape = engine.pool.config.kv_shape
    kv_elements = 2 * shape.num_layers * shape.num_kv_heads * shape.head_dim
    assert engine.pool.bytes_per_token == kv_elements * element_bytes + 13
    assert engine.pool.config.recompute_tokens_per_s == 1500.0
    engine.pool.close()
