"""The connector's scheduler half on plain request objects, without vLLM: repeated offers for a
request that could not be scheduled, a preempted request resumed in new blocks, and what is
left in the pool folder after each end. The pool, tokenizer and detectors are the real ones."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest
import torch
from conftest import ALICE, BOB, prefix_tokens_before, public_document

from cacheprune.detectors import load_policy
from cacheprune.models import load_tokenizer
from cacheprune.pool import KVShape, PoolConfig
from cacheprune.pool.file_store import FileKVStore
from cacheprune.vllm.pool_setup import ConnectorResources
from cacheprune.vllm.scheduler_side import SchedulerSide
from cacheprune.vllm.settings import ConnectorSettings

SHAPE = KVShape(num_layers=2, num_kv_heads=1, head_dim=4)  # small: only the bookkeeping matters
BLOCK_SIZE = 16


@pytest.fixture(scope="module")
def tokenizer():
    return load_tokenizer()


@pytest.fixture(scope="module")
def policy():
    return load_policy()


@pytest.fixture
def store(tmp_path, policy):
    config = PoolConfig(SHAPE, budget_bytes=1 << 26, max_context_tokens=4096,
                        min_entry_tokens=64)
    return FileKVStore(tmp_path / "pool", config, "model-under-test", policy.policy_version)


@pytest.fixture
def scheduler(store, policy, tokenizer):
    settings = ConnectorSettings(pool_dir=str(store.root))
    return SchedulerSide(ConnectorResources(settings, store, policy, BLOCK_SIZE), tokenizer)


def _prompt(tenant) -> str:
    return public_document("scheduler") + tenant.question()


def _request(request_id: str, tokenizer, tenant, status: str = "FINISHED_STOPPED"):
    return SimpleNamespace(
        request_id=request_id, prompt_token_ids=tokenizer.encode(_prompt(tenant)).ids,
        cache_salt=tenant.salt, mm_features=None, status=SimpleNamespace(name=status))


def _step(new=(), cached=(), resumed=(), scheduled=None):
    """A scheduler output: `new` holds (request id, block ids, computed before) for newly
    scheduled requests, `cached` the same for running or resumed ones."""
    return SimpleNamespace(
        scheduled_new_reqs=[SimpleNamespace(req_id=r, block_ids=(list(b),),
                                            num_computed_tokens=c) for r, b, c in new],
        scheduled_cached_reqs=SimpleNamespace(
            req_ids=[r for r, _, _ in cached], new_block_ids=[(list(b),) for _, b, _ in cached],
            num_computed_tokens=[c for _, _, c in cached], resumed_req_ids=set(resumed)),
        num_scheduled_tokens=scheduled or {})


def _blocks(num_tokens: int, first: int) -> list[int]:
    return list(range(first, first + -(-num_tokens // BLOCK_SIZE)))


def _publish_shareable_prefix(scheduler: SchedulerSide, store: FileKVStore, tokenizer) -> int:
    """Alice's request runs to the end: her non-private prefix becomes an entry."""
    alice = _request("alice-1", tokenizer, ALICE)
    assert scheduler.matched_tokens(alice, 0) == 0
    scheduler.after_alloc(alice, 0)
    n = len(alice.prompt_token_ids)
    plan = scheduler.build_plan(_step(new=[("alice-1", _blocks(n, 0), 0)],
                                      scheduled={"alice-1": n}))
    (save,) = plan.saves
    # stand in for the worker: stage KV of the saved tokens (values do not matter here)
    kv = torch.zeros(SHAPE.num_layers, SHAPE.num_kv_heads, len(save.token_ids), SHAPE.head_dim)
    store.stage(save.owner, save.token_ids, kv, kv.clone())
    scheduler.finished(alice)
    return len(save.token_ids)


def test_repeated_offers_hold_one_lease_and_finish_releases_it(scheduler, store, tokenizer):
    published = _publish_shareable_prefix(scheduler, store, tokenizer)
    assert published == prefix_tokens_before(tokenizer, _prompt(ALICE), ALICE.secret)
    leases = store.root / "leases"
    bob = _request("bob-1", tokenizer, BOB)
    expected = prefix_tokens_before(tokenizer, _prompt(BOB), BOB.secret)
    offers = [scheduler.matched_tokens(bob, 0) for _ in range(3)]  # not scheduled twice
    assert offers == [expected] * 3
    assert len(list(leases.iterdir())) == 1
    # vLLM's own prefix cache already holds some blocks: the offer is what lies beyond them
    assert scheduler.matched_tokens(bob, 2 * BLOCK_SIZE) == expected - 2 * BLOCK_SIZE
    assert len(list(leases.iterdir())) == 1
    scheduler.finished(SimpleNamespace(**{**vars(bob), "status": SimpleNamespace(
        name="FINISHED_ABORTED")}))
    assert list(leases.iterdir()) == []
    assert list((store.root / "staging").iterdir()) == []


def test_a_preempted_request_saves_from_the_blocks_it_resumed_in(scheduler, tokenizer):
    bob = _request("bob-2", tokenizer, BOB)
    n = len(bob.prompt_token_ids)
    assert scheduler.matched_tokens(bob, 0) == 0
    scheduler.after_alloc(bob, 0)
    first_blocks = _blocks(n, 0)
    # chunked prefill: the first step computes 128 tokens, too few to save the prefix
    plan = scheduler.build_plan(_step(new=[("bob-2", first_blocks, 0)],
                                      scheduled={"bob-2": 128}))
    assert plan.saves == []
    # preempted, then resumed from scratch in other blocks
    resumed_blocks = _blocks(n, 100)
    plan = scheduler.build_plan(_step(cached=[("bob-2", resumed_blocks, 0)], resumed=["bob-2"],
                                      scheduled={"bob-2": n}))
    (save,) = plan.saves
    shareable = prefix_tokens_before(tokenizer, _prompt(BOB), BOB.secret)
    assert len(save.token_ids) == shareable
    assert save.block_ids == tuple(resumed_blocks)  # not the freed blocks, not both
    assert not set(save.block_ids) & set(first_blocks)
    ids = np.asarray(bob.prompt_token_ids[:shareable])
    assert np.array_equal(np.asarray(save.token_ids), ids)


def test_unsalted_requests_never_touch_the_pool(scheduler, store, tokenizer):
    _publish_shareable_prefix(scheduler, store, tokenizer)
    unsalted = _request("anon-1", tokenizer, BOB)
    unsalted.cache_salt = None
    assert scheduler.matched_tokens(unsalted, 0) == 0
    assert list((store.root / "leases").iterdir()) == []
    n = len(unsalted.prompt_token_ids)
    plan = scheduler.build_plan(_step(new=[("anon-1", _blocks(n, 0), 0)],
                                      scheduled={"anon-1": n}))
    assert plan.loads == [] and plan.saves == []
