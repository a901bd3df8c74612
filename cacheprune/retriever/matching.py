"""Find the pooled segments a request can reuse: scan, verify, choose the best cover.

1. Rolling hashes of every window of K tokens inside the request's non-private runs.
2. Windows whose hash is an anchor key propose candidates (an entry and an offset in it); each
   is extended token by token against the entry from that offset, forward and backward (the
   match may start after and end before the entry does, never outside the run). A window
   inside the last candidate, at its alignment with the same entry, proposes nothing new.
3. The non-overlapping set covering the most tokens is chosen (`cover.best_cover`): any part of
   at least K tokens of a stretch found in step 2.
4. Every chosen match is confirmed by the entries' naming (`entry_name`: a pool's keyed
   SHA-256 HMAC over identity, domain and token bytes): the reader's name for its own tokens
   must equal the entry's. The rolling hash alone never decides anything.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt

from cacheprune.retriever.cover import best_cover
from cacheprune.retriever.identity import DomainTag, EntryName, IdentityDigest
from cacheprune.retriever.index import IndexedSegment, PrefixIndex
from cacheprune.retriever.rolling import window_hashes
from cacheprune.tokens import TokenArray, as_mask_array, as_token_array, common_prefix_length


@dataclass(slots=True, frozen=True)
class Match:
    """`request[request_start : request_start + length] ==
    entry.token_ids[entry_start : entry_start + length]`."""

    request_start: int
    length: int
    entry: EntryName
    entry_start: int = 0

    @property
    def request_end(self) -> int:
        return self.request_start + self.length


@dataclass(slots=True)
class MatchResult:
    """Matches in request order, plus what the scan saw on the way (for the pool's metrics)."""

    matches: list[Match] = field(default_factory=list)
    num_candidates: int = 0  # (window, entry) pairs proposed by the rolling hash
    num_collisions: int = 0  # proposals whose tokens did not match for K tokens
    num_metadata_mismatches: int = 0  # same tokens, another identity or sharing domain
    num_verification_failures: int = 0  # chosen matches whose SHA-256 did not confirm

    @property
    def num_matched_tokens(self) -> int:
        return sum(match.length for match in self.matches)



# NOTE: a window shared by many entries (a system prompt and template that every published
# prompt starts with) would otherwise cost each lookup one comparison per entry: 28 ms at 1,000
# entries. The newest few suffice: the reader's own continuation (its document) is found
# through that entry's other anchors, and the stretch extends back over the shared part.
MAX_CANDIDATES_PER_WINDOW = 16


def _run_bounds(private_mask: npt.NDArray[np.bool_],
                positions: npt.NDArray[np.intp]) -> tuple[list[int], list[int]]:
    """For each position, where its run of non-private tokens starts and ends."""
    private_positions = np.flatnonzero(private_mask)
    after = np.searchsorted(private_positions, positions)
    ends = np.append(private_positions, private_mask.shape[0])[after]
    starts = np.insert(private_positions + 1, 0, 0)[after]
    return starts.tolist(), ends.tolist()


EntryNaming = Callable[[TokenArray], EntryName]
"""How the entries of an index are named from their tokens."""


def _entry_part_name(segment: IndexedSegment, offset: int, length: int,
                     entry_name: EntryNaming) -> EntryName:
    if offset == 0 and length == segment.num_tokens:
        return segment.entry_name
    return entry_name(segment.token_ids[offset : offset + length])


def find_matches(
    token_ids: Sequence[int] | npt.NDArray[np.integer],
    private_mask: Sequence[bool] | npt.NDArray[np.bool_],
    index: PrefixIndex,
    identity_digest: IdentityDigest,
    domain_tag: DomainTag,
    entry_name: EntryNaming,
) -> MatchResult:
    """Reusable parts of a request: non-overlapping, each >= `index.window` tokens, most coverage.

    Pure with respect to `index` (reads only). Private tokens are never hashed, compared or
    matched: every match lies inside one run of non-private tokens. Only entries of exactly
    `identity_digest` and `domain_tag` are used. `entry_name` names a run of tokens the way the
    index's entries were named (a pool passes its keyed `PoolKeys.entry_name`).
    """
    tokens = as_token_array(token_ids)
    mask = as_mask_array(private_mask, tokens.shape[0])
    result = MatchResult()
    window = index.window
    if len(index) == 0 or tokens.shape[0] < window:
        return result
    hashes, is_valid = window_hashes(tokens, mask, window, index.base)
    positions = np.flatnonzero(is_valid)
    keys = hashes[positions].tolist()
    hit = np.fromiter(index.present(keys), dtype=np.bool_, count=len(keys))
    hit_positions = positions[hit]
    if hit_positions.size == 0:
        return result

    # Stretches of the request equal to a stretch of an entry: (low, end, entry, alignment),
    # alignment = request position - entry offset.
    stretches: list[tuple[int, int, IndexedSegment, int]] = []
    found_until: dict[tuple[EntryName, int], int] = {}  # (entry, alignment) -> stretch end
    run_starts, run_ends = _run_bounds(mask, hit_positions)
    for start, run_start, run_end, key in zip(
        hit_positions.tolist(), run_starts, run_ends, hashes[hit_positions].tolist(),
        strict=True,
    ):
        for segment, offset in index.candidates(key, MAX_CANDIDATES_PER_WINDOW):
            if start < found_until.get((segment.entry_name, start - offset), 0):
                continue  # a window inside a stretch found before, at its alignment
            result.num_candidates += 1
            length = common_prefix_length(tokens[start:run_end], segment.token_ids[offset:])
            if length < window:
                result.num_collisions += 1
                continue
            if segment.identity_digest != identity_digest or segment.domain_tag != domain_tag:
                result.num_metadata_mismatches += 1
                continue
            # NOTE: anchors lie every `anchor_stride` tokens, so the first window of a shared
            # stretch that hits one may start up to a stride after the stretch does.
            back = common_prefix_length(tokens[run_start:start][::-1],
                                        segment.token_ids[:offset][::-1])
            stretches.append((start - back, start + length, segment, start - offset))
            found_until[(segment.entry_name, start - offset)] = start + length

    starts, stops, which = best_cover(np.asarray([s[0] for s in stretches], dtype=np.int64),
                                      np.asarray([s[1] for s in stretches], dtype=np.int64),
                                      window)
    for start, stop, chosen in zip(starts.tolist(), stops.tolist(), which.tolist(), strict=True):
        _, _, segment, alignment = stretches[chosen]
        offset, length = start - alignment, stop - start
        reader_name = entry_name(tokens[start : start + length])
        if reader_name != _entry_part_name(segment, offset, length, entry_name):
            result.num_verification_failures += 1
            continue
        result.matches.append(Match(start, length, segment.entry_name, offset))
    return result
