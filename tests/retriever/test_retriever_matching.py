from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from reference_matching import naive_best_coverage, naive_stretches, naive_window_hash

from cacheprune.retriever import (
    IndexedSegment,
    PrefixIndex,
    find_matches,
    random_base,
    unkeyed_entry_name,
)
from cacheprune.retriever.matching import MAX_CANDIDATES_PER_WINDOW
from cacheprune.tokens import as_token_array

MODEL = "model-a"
POLICY = "policy-1"


def find_unkeyed(request, mask, index, identity_digest, domain_tag):
    """`find_matches` over entries named as these tests name them: plain SHA-256, no pool key."""
    return find_matches(request, mask, index, identity_digest, domain_tag,
                        lambda part: unkeyed_entry_name(identity_digest, domain_tag, part))


def make_segment(tokens, model_id=MODEL, policy_version=POLICY):
    token_array = as_token_array(tokens)
    return IndexedSegment(
        unkeyed_entry_name(model_id, policy_version, token_array), token_array, model_id,
        policy_version,
    )


def build_index(entries, window, base=None, anchor_stride=None):
    index = PrefixIndex(window, random_base() if base is None else base, anchor_stride)
    for tokens in entries:
        segment = make_segment(tokens)
        if segment.entry_name not in index:
            index.add(segment)
    return index


@st.composite
def pools_and_requests(draw):
    """Entries cut from a small-vocabulary corpus; requests stitched from their pieces."""
    seed = draw(st.integers(0, 2**32 - 1))
    rng = np.random.default_rng(seed)
    window = draw(st.integers(1, 5))
    vocab = draw(st.integers(2, 6))
    corpus = rng.integers(0, vocab, size=120).tolist()
    entries = []
    for _ in range(draw(st.integers(0, 8))):
        start = int(rng.integers(0, 100))
        length = int(rng.integers(window, window + 20))
        entries.append(corpus[start : start + length])
    entries = [e for e in entries if len(e) >= window]
    request: list[int] = []
    for _ in range(draw(st.integers(0, 6))):
        if entries and rng.random() < 0.7:
            entry = entries[int(rng.integers(0, len(entries)))]
            request += entry[: int(rng.integers(1, len(entry) + 1))]
        else:
            request += rng.integers(0, vocab, size=int(rng.integers(1, 6))).tolist()
    mask = (rng.random(len(request)) < draw(st.sampled_from([0.0, 0.05, 0.3]))).tolist()
    return window, entries, request, mask


@settings(max_examples=150, deadline=None)
@given(pools_and_requests(), st.sampled_from([None, 1, 3]))
def test_matches_equal_naive_substring_search(case, anchor_stride):
    window, entries, request, mask = case
    index = build_index(entries, window, anchor_stride=anchor_stride)
    result = find_unkeyed(request, mask, index, MODEL, POLICY)
    covered = 0
    previous_end = 0
    for match in result.matches:
        entry = index.segment(match.entry).token_ids.tolist()
        part = request[match.request_start : match.request_end]
        assert match.length >= window
        assert match.request_start >= previous_end
        assert part == entry[match.entry_start : match.entry_start + match.length]
        assert not any(mask[match.request_start : match.request_end])
        # inside a findable stretch: one that holds an anchor window of its entry
        assert any(low <= match.request_start and match.request_end <= end
                   for low, end in naive_stretches(request, mask, [entry], window,
                                                   anchor_stride))
        previous_end = match.request_end
        covered += match.length
    assert covered == naive_best_coverage(request, mask, entries, window, anchor_stride)
    assert result.num_verification_failures == 0


@settings(max_examples=60, deadline=None)
@given(st.integers(0, 2**32 - 1))
def test_private_tokens_are_never_matched(seed):
    rng = np.random.default_rng(seed)
    entry = rng.integers(0, 3, size=40).tolist()
    index = build_index([entry], 3)
    request = entry * 2
    mask = (rng.random(len(request)) < 0.15).tolist()
    for match in find_unkeyed(request, mask, index, MODEL, POLICY).matches:
        assert not any(mask[match.request_start : match.request_end])


def test_prefix_of_an_entry_matches_where_the_request_diverges():
    entry = list(range(100, 150))
    index = build_index([entry], 8)
    request = [7, 7] + entry[:20] + [999] + entry[:30]
    result = find_unkeyed(request, [False] * len(request), index, MODEL, POLICY)
    assert [(m.request_start, m.length) for m in result.matches] == [(2, 20), (23, 30)]


def test_match_stops_at_a_private_token():
    entry = list(range(100, 150))
    index = build_index([entry], 8)
    mask = [False] * 50
    mask[25] = True
    result = find_unkeyed(entry, mask, index, MODEL, POLICY)
    assert [(m.request_start, m.length) for m in result.matches] == [(0, 25)]


def test_forced_rolling_hash_collision_never_matches():
    # With base 1000, raising token K-2 by 1 and lowering token K-1 by 1000 keeps the window
    # hash: a genuine collision of the real hash, not a fake one.
    base, window = 1000, 6
    entry = [5000, 5001, 5002, 5003, 5004, 5005, 5006, 5007]
    request = entry[:4] + [entry[4] + 1, entry[5] - 1000] + entry[6:]
    assert naive_window_hash(request[:window], base) == naive_window_hash(entry[:window], base)
    index = build_index([entry], window, base=base)
    result = find_unkeyed(request, [False] * len(request), index, MODEL, POLICY)
    assert result.matches == []
    assert result.num_candidates == 1
    assert result.num_collisions == 1


@pytest.mark.parametrize("model_id, policy_version", [("model-b", POLICY), (MODEL, "policy-2")])
def test_other_model_or_policy_gets_no_hit(model_id, policy_version):
    entry = list(range(40))
    index = build_index([entry], 8)
    result = find_unkeyed(entry, [False] * 40, index, model_id, policy_version)
    assert result.matches == []
    assert result.num_metadata_mismatches == 1


def test_tampered_entry_fails_sha256_verification():
    entry = as_token_array(list(range(40)))
    segment = make_segment(entry)
    index = PrefixIndex(8, random_base())
    index.add(segment)
    segment.token_ids[20] = 12345  # injected fault: tokens changed after the identity was set
    request = segment.token_ids.tolist()
    result = find_unkeyed(request, [False] * 40, index, MODEL, POLICY)
    assert result.matches == []
    assert result.num_verification_failures == 1


def test_identity_binds_model_and_policy_unambiguously():
    tokens = as_token_array([1, 2, 3])
    assert unkeyed_entry_name("ab", "c", tokens) != unkeyed_entry_name("a", "bc", tokens)
    assert unkeyed_entry_name("a", "b", tokens) != unkeyed_entry_name("a", "b", tokens[:2])


def test_index_remove_forgets_the_entry():
    entry = list(range(30))
    index = build_index([entry], 4)
    (entry_name,) = [make_segment(entry).entry_name]
    index.remove(entry_name)
    assert find_unkeyed(entry, [False] * 30, index, MODEL, POLICY).matches == []
    with pytest.raises(KeyError):
        index.remove(entry_name)


def test_mask_of_wrong_length_is_refused():
    index = build_index([list(range(10))], 4)
    with pytest.raises(ValueError, match="one flag per token"):
        find_unkeyed(list(range(10)), [False] * 9, index, MODEL, POLICY)


def test_a_window_shared_by_many_entries_costs_a_bounded_number_of_comparisons():
    """Every entry starts with the same 40 tokens (a system prompt and template); the reader's
    own entry is found through its other anchors, and its match reaches back over the shared
    start, while the shared windows propose at most MAX_CANDIDATES_PER_WINDOW entries each."""
    rng = np.random.default_rng(3)
    shared = rng.integers(1000, 2000, size=40).tolist()
    entries = [shared + rng.integers(2000, 60000, size=120).tolist() for _ in range(200)]
    index = build_index(entries, 16, anchor_stride=16)
    request = entries[0] + [7, 7, 7]
    result = find_unkeyed(request, [False] * len(request), index, MODEL, POLICY)
    assert [(m.request_start, m.length) for m in result.matches] == [(0, len(entries[0]))]
    # 40 shared tokens hold two anchored windows (offsets 0 and 16): each proposes at most the
    # cap; the reader's own windows propose its entry alone.
    assert result.num_candidates <= 2 * MAX_CANDIDATES_PER_WINDOW + len(entries[0]) // 16
