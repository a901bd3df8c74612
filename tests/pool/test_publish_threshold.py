"""The publication threshold on every backend: a window is shareable only once k distinct
tenants sent it, compared with a brute-force count of who sent what."""

from __future__ import annotations

import numpy as np
import pytest
import redis
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pool_helpers import WINDOW, ManualClock, kv_for, make_pool, scope, segment

from cacheprune.pool import BelowThresholdError, SessionStateError
from cacheprune.tokens import true_runs


def send(pool, tenant, tokens, declared=None, request_id="r"):
    """One request of `tenant` that looks `tokens` up: its shareable runs and its hits."""
    with pool.session(request_id, scope(tenant=tenant)) as session:
        matches = session.lookup(tokens, np.zeros(len(tokens), dtype=bool), declared)
        runs = session.shareable_runs(tokens, 1)
        session.commit()
    return runs, sum(match.length for match in matches)


def send_and_publish(pool, tenant, tokens, request_id="p"):
    """A request that publishes every run of its tokens the threshold allows."""
    keys, values, positions = kv_for(tokens)
    with pool.session(request_id, scope(tenant=tenant)) as session:
        session.lookup(tokens, np.zeros(len(tokens), dtype=bool))
        runs = session.shareable_runs(tokens, WINDOW)
        for start, end in runs:
            session.stage(tokens[start:end], keys[:, :, start:end], values[:, :, start:end],
                          positions[start:end], np.zeros(end - start, bool),
                          np.zeros(end - start, bool))
        session.commit()
    return runs


def brute_force_runs(history, tokens, k):
    """Runs of `tokens` covered by a window that k distinct tenants of `history` sent."""
    covered = np.zeros(len(tokens), dtype=bool)
    for start in range(len(tokens) - WINDOW + 1):
        window = tuple(tokens[start:start + WINDOW])
        senders = {tenant for tenant, sent in history
                   if any(tuple(sent[p:p + WINDOW]) == window
                          for p in range(len(sent) - WINDOW + 1))}
        if len(senders) >= k:
            covered[start:start + WINDOW] = True
    return true_runs(covered)


def test_reuse_begins_once_k_tenants_sent_the_segment(pool_url):
    pool = make_pool(200, url=pool_url, publish_threshold=3)
    document = segment(100, 12)
    assert send_and_publish(pool, "a", document) == []
    assert send_and_publish(pool, "b", document) == []
    assert pool.num_entries == 0  # two tenants: nothing reached the pool
    assert send_and_publish(pool, "c", document) == [(0, 12)]
    assert pool.num_entries == 1
    _, hits = send(pool, "d", document)
    assert hits == 12


def test_one_attacker_account_cannot_raise_a_victims_value_to_k(pool_url):
    pool = make_pool(200, url=pool_url, publish_threshold=3)
    document = segment(100, 8)
    victim = document + [7, 7, 7, 7, 7]  # a value the detectors missed, after a shared text
    for tenant in ("a", "b", "c"):  # the document is common: three tenants sent it
        send(pool, tenant, document)
    send_and_publish(pool, "victim", victim)
    for attempt in range(3):  # the attacker sends the right guess again and again
        runs = send_and_publish(pool, "attacker", victim, request_id=f"x{attempt}")
        assert all(end <= len(document) for _, end in runs)
        _, hits = send(pool, "attacker", victim, request_id=f"y{attempt}")
        assert hits <= len(document)
    stored = [tokens.tolist() for tokens in pool.stored_token_ids()]
    assert all(7 not in tokens for tokens in stored)


def test_a_staged_segment_below_the_threshold_is_refused(pool_url):
    pool = make_pool(200, url=pool_url, publish_threshold=2)
    tokens = segment(50, 8)
    keys, values, positions = kv_for(tokens)
    with pool.session("early", scope(tenant="a")) as session:
        session.lookup(tokens, np.zeros(8, dtype=bool))
        with pytest.raises(BelowThresholdError, match="fewer than 2 tenants"):
            session.stage(tokens, keys, values, positions, np.zeros(8, bool), np.zeros(8, bool))
        session.commit()
    assert pool.num_entries == 0


def test_declared_public_tokens_are_shareable_uncounted(pool_url):
    pool = make_pool(200, url=pool_url, publish_threshold=3)
    system = segment(10, 6)
    prompt = system + [1, 2, 3, 4, 5]
    declared = np.zeros(len(prompt), dtype=bool)
    declared[:6] = True
    runs, _ = send(pool, "a", prompt, declared=declared)
    assert runs == [(0, 6)]  # the declared stretch, not the tenant's own text after it


def test_an_erased_tenant_no_longer_counts_as_a_sender(pool_url):
    """Erasure removes the tenant's marks at once (not only when they expire): a window it
    sent counts one sender fewer, while the other tenants' marks stay."""
    pool = make_pool(200, url=pool_url, publish_threshold=2)
    document, other = segment(100, 12), segment(300, 12)
    send(pool, "a", document)
    send(pool, "b", other)
    assert pool.erase_tenant("a") == 0  # no entry, but its marks on every window
    windows = len(document) - WINDOW + 1
    erased = pool.metrics.registry.get_sample_value("cacheprune_pool_erased_senders_total")
    assert erased == windows
    assert send(pool, "c", document)[0] == []  # only c now: a does not count any more
    assert send(pool, "d", other)[0] == [(0, 12)]  # b's marks were left alone
    assert send(pool, "e", document)[0] == [(0, 12)]  # c and e


def test_senders_are_forgotten_after_the_ttl(pool_url):
    clock = ManualClock()
    pool = make_pool(200, url=pool_url, publish_threshold=2, sender_count_ttl_s=60.0,
                     clock=clock)
    tokens = segment(30, 8)
    send(pool, "a", tokens)
    clock.now += 61
    runs, _ = send(pool, "b", tokens)
    assert runs == []  # a's send expired: b is alone
    runs, _ = send(pool, "c", tokens)
    assert runs == [(0, 8)]


@settings(max_examples=10, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.integers(0, 2**32 - 1))
def test_shareable_runs_equal_brute_force(pool_url, seed):
    rng = np.random.default_rng(seed)
    pool = make_pool(400, url=pool_url, publish_threshold=int(rng.integers(2, 4)))
    k = pool.config.publish_threshold
    # hypothesis reuses the fixture's server and folder: start each example empty
    if pool_url.startswith(("redis", "unix")):
        redis.Redis.from_url(pool_url).flushdb()
    elif pool_url.startswith("file"):
        pool = make_pool(400, url=f"{pool_url}-{seed}", publish_threshold=k)
    texts = [rng.integers(0, 3, size=int(rng.integers(WINDOW, 12))).tolist() for _ in range(3)]
    history = []
    for i in range(8):
        tenant = f"t{int(rng.integers(0, 4))}"
        tokens = texts[int(rng.integers(0, 3))][int(rng.integers(0, 2)):]
        tokens = tokens + [int(rng.integers(0, 3))] * int(rng.integers(0, 3))
        if len(tokens) < WINDOW:
            continue
        history.append((tenant, tokens))
        runs, _ = send(pool, tenant, tokens, request_id=f"q{i}")
        assert runs == brute_force_runs(history, tokens, k)


def test_forged_and_copied_marks_do_not_count(valkey_url):
    pool = make_pool(200, url=valkey_url, publish_threshold=3)
    tokens = segment(60, 8)
    send(pool, "a", tokens)
    client = redis.Redis.from_url(valkey_url)
    window_keys = list(client.scan_iter(match=b"cp:w:*"))
    assert len(window_keys) == len(tokens) - WINDOW + 1
    marks = [client.zrange(key, 0, -1)[0] for key in window_keys]
    for i, key in enumerate(window_keys):  # a writer without the key plants marks
        client.zadd(key, {b"\x01" * 16: 1e12, marks[(i + 1) % len(marks)]: 1e12})
    client.rpush(b"cp:w:" + b"\x00" * 8, b"junk")  # and a key of the wrong type
    runs, _ = send(pool, "b", tokens)
    assert runs == []  # a and b are 2 of 3: the planted marks did not count
    assert "cacheprune_pool_forged_senders_total" in pool.metrics_text()


def test_the_count_reply_does_not_grow_with_the_senders(valkey_url):
    """Each window answers exactly k marks (padded), whether one tenant or many sent it: the
    reply's size and the reader's work do not tell a prober how common its guess is."""
    from cacheprune.pool.threshold import PAD

    pool = make_pool(200, url=valkey_url, publish_threshold=3)
    lonely, common = segment(60, 8), segment(500, 8)
    for tenant in ("a", "b", "c", "d", "e"):
        send(pool, tenant, common)
    counts, keys = pool.threshold.counts, pool.keys
    replies = {}
    for name, tokens in (("lonely", lonely), ("common", common)):
        _, ids = pool.threshold.window_ids(keys.scope_tag(scope().identity.digest(),
                                                          scope().domain),
                                           np.asarray(tokens, dtype=np.uint32),
                                           np.zeros(len(tokens), dtype=bool))
        marks = keys.sender_marks(keys.tenant_tag("reader"), ids)
        replies[name] = counts.add_and_read(ids, marks, 1e9, 3600.0, 12, 1000, read=3)
    for windows in replies.values():
        assert all(len(window) == 3 and all(len(m) == 16 for m in window)
                   for window in windows)
    assert all(window.count(PAD) == 2 for window in replies["lonely"])  # the reader alone
    assert all(PAD not in window for window in replies["common"])


def test_a_dead_count_store_leaves_nothing_common(valkey_server, valkey_url):
    pool = make_pool(200, url=valkey_url, publish_threshold=2, store_timeout_s=0.2)
    tokens = segment(60, 8)
    send(pool, "a", tokens)
    client = redis.Redis.from_url(valkey_url)
    client.client_pause(1500)
    runs, hits = send(pool, "b", tokens)
    assert runs == [] and hits == 0


@pytest.mark.parametrize("store", ["memory", "file"])
def test_the_stores_forget_the_least_recently_sent_windows_beyond_their_bound(store, tmp_path):
    from cacheprune.pool.threshold import MemorySenderCounts
    from cacheprune.pool.threshold_stores import FileSenderCounts

    counts = (MemorySenderCounts() if store == "memory"
              else FileSenderCounts(str(tmp_path / "senders.sqlite"), 1.0))
    mark = b"m" * 16
    for window in range(64):  # a new window per call: the folder's table is trimmed at 64
        counts.add_and_read(np.array([window], dtype=np.uint64), [mark], 10.0 + window, 3600.0,
                            4, max_windows=2, read=4)
    kept = [window for window in range(64)
            if counts.add_and_read(np.array([window], dtype=np.uint64), [b"n" * 16], 100.0,
                                   3600.0, 1, max_windows=1_000, read=4)[0] == [mark]]
    assert kept and kept == list(range(64 - len(kept), 64))  # the most recent ones
    assert len(kept) <= 8  # 2 windows x the marks a window may hold (4)


def test_a_session_that_only_publishes_carries_the_count_of_the_one_that_looked_up(pool_url):
    """The vLLM connector looks up in one session and publishes in another: the publishing
    session carries the reading session's count (the windows are counted once), then stages
    what k tenants sent."""
    pool = make_pool(200, url=pool_url, publish_threshold=2)
    tokens = segment(40, 8)
    send(pool, "a", tokens)
    with pool.session("reading", scope(tenant="b")) as reading:
        reading.lookup(tokens, np.zeros(8, dtype=bool))
        counted = reading.counted
    keys, values, positions = kv_for(tokens)
    with pool.session("publishing", scope(tenant="b")) as session:
        assert session.shareable_runs(tokens, WINDOW) == []  # nothing counted here yet
        session.carry_count(counted)
        assert session.shareable_runs(tokens, WINDOW) == [(0, 8)]
        session.stage(tokens, keys, values, positions, np.zeros(8, bool), np.zeros(8, bool))
        session.commit()
    assert pool.num_entries == 1
    with pool.session("elsewhere", scope(tenant="b", domain="other")) as other:
        with pytest.raises(SessionStateError, match="another scope"):
            other.carry_count(counted)
