from __future__ import annotations

import asyncio

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from pool_helpers import (
    BYTES_PER_TOKEN,
    MODEL,
    POLICY,
    ManualClock,
    kv_for,
    make_pool,
    publish,
    scope,
    segment,
)

from cacheprune.pool import (
    InvalidEntryError,
    PrivateTokenError,
    PromptTooLongError,
    SessionState,
    SessionStateError,
    SessionTimeoutError,
)

NO_MASK = np.zeros(8, dtype=bool)


def stage_segment(session, token_ids, mask=None):
    keys, values, positions = kv_for(token_ids)
    flags = np.zeros(len(token_ids), dtype=bool)
    return session.stage(
        token_ids, keys, values, positions, flags, flags if mask is None else mask
    )


def assert_baseline(pool, num_entries, num_tokens):
    assert pool.num_leases == 0
    assert pool.leased_bytes == 0
    assert pool.num_entries == num_entries
    assert pool.bytes_in_use == num_tokens * BYTES_PER_TOKEN


def test_committed_segment_is_found_and_read_back_at_its_positions():
    pool = make_pool(budget_tokens=64)
    tokens = segment(100, 8)
    publish(pool, tokens)
    request = [1, 2] + tokens[:6] + [3]
    with pool.session("reader", scope()) as session:
        (match,) = session.lookup(request, np.zeros(len(request), dtype=bool))
        assert (match.request_start, match.length) == (2, 6)
        kv = session.read(match)
        keys, values, positions = kv_for(tokens)
        assert torch.equal(kv.keys, keys[:, :, :6, :])
        assert torch.equal(kv.values, values[:, :, :6, :])
        assert kv.positions.tolist() == positions[:6].tolist()
        assert pool.num_leases == 1
    assert_baseline(pool, 1, 8)


def run_failing_request(pool, failure):
    """Look up, read, stage, then fail the way `failure` says; returns the session."""
    tokens = segment(100, 8)
    new_tokens = segment(500, 8)
    with pytest.raises(BaseException) as info:  # noqa: B017 - each failure raises its own type
        with pool.session("victim", scope()) as session:
            (match,) = session.lookup(tokens, NO_MASK)
            session.read(match)
            stage_segment(session, new_tokens)
            failure(session)
    return session, info.value


class MidPrefillError(RuntimeError):
    pass


def raise_mid_prefill(session):
    raise MidPrefillError("device lost in layer 7")


def raise_after_commit(session):
    session.commit()
    raise MidPrefillError("decode failed")


def raise_cancelled(session):
    raise asyncio.CancelledError


def raise_prompt_too_long(session):
    session.lookup(segment(0, 17), np.zeros(17, dtype=bool))


@pytest.mark.parametrize(
    "failure", [raise_mid_prefill, raise_after_commit, raise_cancelled, raise_prompt_too_long]
)
def test_failed_request_releases_leases_and_publishes_nothing(failure):
    pool = make_pool(budget_tokens=64)
    publish(pool, segment(100, 8))
    session, error = run_failing_request(pool, failure)
    assert session.state is SessionState.DISCARDED
    assert session.discard_reason == f"exception:{type(error).__name__}"
    assert_baseline(pool, 1, 8)
    assert pool.entry_infos()[0].num_tokens == 8


def test_prompt_longer_than_the_context_is_rejected_with_both_numbers():
    pool = make_pool(budget_tokens=64)
    with pool.session("r", scope()) as session:
        with pytest.raises(PromptTooLongError, match="17 tokens.*16"):
            session.lookup(segment(0, 17), np.zeros(17, dtype=bool))


def test_timeout_discards_staged_entries():
    clock = ManualClock()
    pool = make_pool(budget_tokens=64, clock=clock)
    with pool.session("slow", scope(), timeout_s=5.0) as session:
        stage_segment(session, segment(100, 8))
        session.commit()
        clock.now += 5.0
    assert session.discard_reason == "timeout"
    assert_baseline(pool, 0, 0)
    with pool.session("late", scope(), timeout_s=1.0) as late:
        clock.now += 2.0
        with pytest.raises(SessionTimeoutError):
            late.lookup(segment(100, 8), NO_MASK)


def test_abort_and_missing_commit_discard():
    pool = make_pool(budget_tokens=64)
    with pool.session("rejected", scope()) as session:
        stage_segment(session, segment(100, 8))
        session.abort("queue_full")
    assert session.discard_reason == "aborted:queue_full"
    with pool.session("forgetful", scope()) as session:
        stage_segment(session, segment(100, 8))
    assert session.discard_reason == "not_committed"
    assert_baseline(pool, 0, 0)


def test_session_is_unusable_outside_its_block():
    pool = make_pool(budget_tokens=64)
    session = pool.session("r", scope())
    with pytest.raises(SessionStateError, match="with store.session"):
        session.lookup(segment(0, 8), NO_MASK)
    with session:
        pass
    with pytest.raises(SessionStateError):
        stage_segment(session, segment(0, 8))
    with pytest.raises(SessionStateError, match="only once"):
        session.__enter__()


@pytest.mark.parametrize("extra_tokens, fits", [(-1, True), (0, True), (1, False)])
def test_entry_size_boundary_at_max_context(extra_tokens, fits):
    pool = make_pool(budget_tokens=16, max_context_tokens=16)
    tokens = segment(100, 16 + extra_tokens)
    with pool.session("p", scope()) as session:
        if fits:
            stage_segment(session, tokens)
        else:
            with pytest.raises(InvalidEntryError, match="between 4 and 16 tokens"):
                stage_segment(session, tokens)
        session.commit()
    assert_baseline(pool, int(fits), len(tokens) if fits else 0)


@settings(max_examples=40, deadline=None)
@given(st.lists(st.booleans(), min_size=8, max_size=8))
def test_private_token_is_never_stored(mask):
    pool = make_pool(budget_tokens=64)
    mask_array = np.asarray(mask, dtype=bool)
    with pool.session("p", scope()) as session:
        if mask_array.any():
            with pytest.raises(PrivateTokenError, match="private"):
                stage_segment(session, segment(100, 8), mask_array)
        else:
            stage_segment(session, segment(100, 8), mask_array)
        session.commit()
    assert pool.num_entries == int(not mask_array.any())


@settings(max_examples=40, deadline=None)
@given(st.integers(0, 2**32 - 1))
def test_private_request_token_is_never_matched(seed):
    rng = np.random.default_rng(seed)
    pool = make_pool(budget_tokens=64, max_context_tokens=32)
    stored = rng.integers(0, 3, size=12).tolist()
    publish(pool, stored)
    request = stored + stored[: int(rng.integers(4, 12))]
    mask = rng.random(len(request)) < 0.2
    with pool.session("r", scope()) as session:
        for match in session.lookup(request, mask):
            assert not mask[match.request_start : match.request_end].any()


@pytest.mark.parametrize(
    "keys, message",
    [
        (torch.zeros(2, 1, 8, 4, dtype=torch.float64), "float32"),
        (torch.zeros(2, 1, 7, 4), r"shape \(2, 1, 8, 4\)"),
        (torch.zeros(2, 2, 8, 4), r"shape \(2, 1, 8, 4\)"),
        (np.zeros((2, 1, 8, 4), dtype=np.float32), "torch.Tensor"),
    ],
)
def test_bad_kv_is_refused_and_nothing_is_staged(keys, message):
    pool = make_pool(budget_tokens=64)
    tokens = segment(100, 8)
    _, values, positions = kv_for(tokens)
    with pool.session("p", scope()) as session:
        with pytest.raises(InvalidEntryError, match=message):
            session.stage(tokens, keys, values, positions, NO_MASK, NO_MASK)
        assert session.num_staged == 0
        session.commit()
    assert_baseline(pool, 0, 0)


def test_mismatched_lengths_are_refused():
    pool = make_pool(budget_tokens=64)
    tokens = segment(100, 8)
    keys, values, positions = kv_for(tokens)
    with pool.session("p", scope()) as session:
        with pytest.raises(InvalidEntryError, match="positions"):
            session.stage(tokens, keys, values, positions[:7], NO_MASK, NO_MASK)
        with pytest.raises(InvalidEntryError, match="recompute"):
            session.stage(tokens, keys, values, positions, NO_MASK[:7], NO_MASK)
        with pytest.raises(InvalidEntryError, match="token_ids"):
            session.stage([-1] * 8, keys, values, positions, NO_MASK, NO_MASK)


def test_other_model_or_policy_gets_no_hit():
    pool = make_pool(budget_tokens=64)
    publish(pool, segment(100, 8))
    for model_id, policy_version in (("model-b", POLICY), (MODEL, "policy-2")):
        with pool.session("r", scope(model_id, policy_version)) as session:
            assert session.lookup(segment(100, 8), NO_MASK) == []
    with pool.session("r", scope()) as session:
        assert len(session.lookup(segment(100, 8), NO_MASK)) == 1


def test_invalidated_lease_reads_as_a_miss_and_is_freed_on_release():
    pool = make_pool(budget_tokens=64)
    publish(pool, segment(100, 8))
    with pool.session("r", scope()) as session:
        (match,) = session.lookup(segment(100, 8), NO_MASK)
        assert pool.invalidate(match.entry)
        assert pool.num_entries == 0
        assert pool.bytes_in_use == 8 * BYTES_PER_TOKEN  # still pinned by the lease
        assert session.read(match) is None  # the caller computes those tokens instead
    assert_baseline(pool, 0, 0)
