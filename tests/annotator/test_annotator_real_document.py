"""On a real prefill of the default model: a public passage after a private profile is covered
by segments, and the tokens right after the private details are recomputed or left out."""

from __future__ import annotations

import random

import numpy as np
import pytest
import torch

from cacheprune.annotator import AnnotatorConfig, annotate

SYSTEM = "You are a careful assistant. Answer questions about the report below.\n"
PRIVATE_DETAILS = ["Ilse Varnholt-Quenby", "ilse.vq@postbox-example.net", "+44 20 7946 0321"]
PROFILE = "Profile of the user: {}, reachable at {} or by phone on {}.\n"

SUBJECTS = [
    "The survey of coastal wetlands", "A second field campaign", "The sediment analysis",
    "Our long-term monitoring network", "The regional water authority", "Local fishing crews",
    "The satellite imagery", "A panel of hydrologists", "The restored salt marsh",
    "Volunteer bird counters", "The tidal gauge record", "An independent audit",
]
VERBS = [
    "showed", "suggested", "confirmed", "questioned", "documented", "estimated",
    "traced", "compared", "mapped", "reported",
]
OBJECTS = [
    "a steady rise in nitrogen levels during the dry months",
    "that eelgrass recovered faster where grazing was limited",
    "how storm surges reshaped the northern channels",
    "a decline in juvenile flounder near the estuary mouth",
    "that reed beds trapped most of the fine silt",
    "seasonal shifts in salinity along the old canal",
    "the cost of dredging against the value of natural buffers",
    "unexpected numbers of wintering geese on the mudflats",
    "that culverts built in the sixties block fish passage",
    "a link between upstream farming and algal blooms",
]
QUALIFIERS = [
    "after heavy autumn rain", "across three consecutive years", "in every sampled creek",
    "despite gaps in the early data", "when compared with inland lakes",
    "once the weirs were removed", "at both low and high tide", "within the protected zone",
]


def public_passage(num_sentences: int, seed: int) -> str:
    rng = random.Random(seed)
    sentences = [
        f"{rng.choice(SUBJECTS)} {rng.choice(VERBS)} {rng.choice(OBJECTS)} "
        f"{rng.choice(QUALIFIERS)}."
        for _ in range(num_sentences)
    ]
    paragraphs = [" ".join(sentences[k : k + 6]) for k in range(0, num_sentences, 6)]
    return "\n\n".join(paragraphs) + "\n"


@pytest.mark.slow
def test_segments_cover_the_public_passage_and_spare_the_profile(default_model) -> None:  # type: ignore[no-untyped-def]
    from cacheprune.engine import AttentionCapture, PrefillPlan

    model, tokenizer = default_model
    profile = PROFILE.format(*PRIVATE_DETAILS)
    text = SYSTEM + profile + public_passage(num_sentences=24, seed=11)
    encoding = tokenizer.encode(text)
    n = len(encoding.ids)
    private_spans = [(text.index(detail), text.index(detail) + len(detail))
                     for detail in PRIVATE_DETAILS]
    private_mask = np.array(
        [any(start < s_end and s_start < end for s_start, s_end in private_spans)
         for start, end in encoding.offsets]
    )
    passage_start = next(k for k, (start, _) in enumerate(encoding.offsets)
                         if start >= len(SYSTEM) + len(profile))
    last_private = int(np.flatnonzero(private_mask).max())

    result = model.prefill(PrefillPlan.full(encoding.ids), capture=AttentionCapture())
    assert isinstance(result.attention, torch.Tensor)
    attention = result.attention.numpy()
    annotation = annotate(attention, private_mask, np.ones(n, dtype=bool), AnnotatorConfig())

    in_segment = np.zeros(n, dtype=bool)
    marked = np.zeros(n, dtype=bool)
    for segment in annotation.segments:
        in_segment[segment.start : segment.end] = True
        marked[segment.start : segment.end] = segment.recompute
    passage_coverage = in_segment[passage_start:].mean()
    after = np.arange(last_private + 1, last_private + 21)
    print(f"\nprompt {n} tokens, private {int(private_mask.sum())}, passage from {passage_start}")
    print("segments:", [(s.start, s.end, s.num_recompute) for s in annotation.segments])
    print(f"passage coverage {passage_coverage:.3f}, recompute ratio "
          f"{annotation.recompute_ratio:.3f}")
    print("20 tokens after the last private one (in segment / marked):",
          "".join("." if not in_segment[k] else "R" if marked[k] else "s" for k in after))

    assert not (in_segment & private_mask).any()
    assert passage_coverage >= 0.9
    # The tokens right after the private details lean on them most: none may be published as is.
    first_after = after[:5]
    assert (~in_segment[first_after] | marked[first_after]).all()
    # Further into the passage, tokens stand on their own and are kept without recompute.
    assert annotation.recompute_ratio < 0.1
