"""The publication threshold on the default model, with detection switched off: what one tenant
typed never reaches the pool, and one attacker account reads nothing from the hit count, while
the same engine with k = 1 leaks (the positive control)."""

from __future__ import annotations

import pytest

from cacheprune.detectors import load_policy
from cacheprune.detectors.yaml_io import shipped_file
from cacheprune.serving import Engine, EngineConfig, SamplingParams

pytestmark = pytest.mark.slow

DOCUMENT = (
    "The Harbor Street library opens at nine in the morning and closes at six in the evening "
    "on weekdays. On Saturdays it opens at ten and closes at four. Members may borrow up to "
    "eight books at a time for three weeks, and renew each loan twice unless another member "
    "has reserved the book. Late returns cost twenty cents per book per day. "
) * 2
ONE_TOKEN = SamplingParams(max_new_tokens=1)
CODES = {"victim": "48213907", "b": "71530264", "c": "90317755", "d": "26648013"}


def _messages(code: str):
    return [{"role": "user", "content": f"{DOCUMENT}\n\nMy locker code is {code}. "
                                        "When does the library close on Saturdays?"}]


@pytest.fixture(scope="module")
def blind_policy():
    return load_policy(str(shipped_file("policy_none.yaml")))


def _engine(default_model, policy, k: int) -> Engine:
    model, tokenizer = default_model
    return Engine(model, tokenizer, policy, EngineConfig(publish_threshold=k))


def _pooled_text(engine: Engine) -> str:
    return "\n".join(engine.tokenizer.decode(ids.tolist())
                     for ids in engine.pool.stored_token_ids())


def test_reuse_begins_with_the_kth_tenant_and_no_single_tenants_text_is_pooled(
        default_model, blind_policy):
    engine = _engine(default_model, blind_policy, k=3)
    records = [engine.generate(tenant, _messages(code), ONE_TOKEN)
               for tenant, code in CODES.items()]
    assert [r.num_private for r in records] == [0, 0, 0, 0]  # detection is off
    assert [r.num_hit_tokens for r in records[:3]] == [0, 0, 0]
    assert records[0].num_published_tokens == records[1].num_published_tokens == 0
    assert records[2].num_published_tokens > 0  # the third tenant's request publishes
    assert records[3].num_hit_tokens > 100  # the fourth reuses the document
    pooled = _pooled_text(engine)
    assert "Harbor Street" in pooled
    for code in CODES.values():
        assert code not in pooled and code[:4] not in pooled


def test_k1_pools_a_tenants_undetected_value(default_model, blind_policy):
    engine = _engine(default_model, blind_policy, k=1)
    engine.generate("victim", _messages(CODES["victim"]), ONE_TOKEN)
    assert CODES["victim"][:4] in _pooled_text(engine)


@pytest.mark.parametrize("k", [1, 3])
def test_one_attacker_account_reads_the_value_only_without_a_threshold(
        default_model, blind_policy, k):
    engine = _engine(default_model, blind_policy, k=k)
    # The victim first (its request publishes into an empty pool: the worst case), then three
    # tenants make the document common; the victim's code stays the victim's alone.
    for tenant in ("victim", "b", "c", "d"):
        engine.generate(tenant, _messages(CODES[tenant]), ONE_TOKEN)

    def hits(guess: str) -> int:
        # Under a threshold the attacker sends each guess twice: the first may lift a count
        # to k and publish, the second would read the hit.
        for _ in range(1 if k == 1 else 2):
            record = engine.generate("attacker", _messages(guess), ONE_TOKEN)
        return record.num_hit_tokens

    right, wrong = hits(CODES["victim"]), hits("55555555")
    assert wrong > 100  # the oracle works: the shared document is a hit
    if k == 1:
        assert right > wrong, "without a threshold the right guess must show"
    else:
        assert right == wrong, "one account must not tell the right guess from a wrong one"


def test_known_clean_text_is_skipped_from_the_kth_tenant_on_with_the_same_masks_and_hits(
        default_model):
    policy = load_policy(None)
    model, tokenizer = default_model
    skipping = Engine(model, tokenizer, policy, EngineConfig(publish_threshold=3))
    scanning = Engine(model, tokenizer, policy,
                      EngineConfig(publish_threshold=3, skip_known_clean=False))
    for index, (tenant, code) in enumerate(CODES.items()):
        known = skipping._known_clean_for(tenant)
        assert known is not None and scanning._known_clean_for(tenant) is None
        # The document is skipped once three tenants sent it: for the fourth one only.
        assert bool(known.skippable(DOCUMENT)) == (index == 3), tenant
        fast, whole = (engine.generate(tenant, _messages(code), ONE_TOKEN)
                       for engine in (skipping, scanning))
        assert (fast.num_private, fast.num_hit_tokens, fast.num_published_tokens) == \
            (whole.num_private, whole.num_hit_tokens, whole.num_published_tokens), tenant
    other_mode = Engine(model, tokenizer, policy, EngineConfig(mode="no_sharing"))
    assert other_mode._known_clean_for("victim") is None
