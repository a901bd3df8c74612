"""A new document that happens to hold short stretches of text already in the pool (a common
sentence every few lines) is still published: the stretches it reused cut its new text into
runs shorter than a segment, but isolated mode's private-free pass computes them anyway, so
they join the new text around them. Without that, nothing of the document is ever published
and every later tenant computes it whole."""

from __future__ import annotations

import random

import numpy as np
import pytest
import torch
from serving_helpers import count_private_free_passes

from cacheprune.detectors import load_policy
from cacheprune.engine import PrefillPlan, ReusedSpan
from cacheprune.serving import Engine, EngineConfig, SamplingParams
from cacheprune.serving.prompt import render_prompt

WORDS = ("harbour lantern quiet meadow copper window orchard river gentle market stone "
         "valley evening bridge candle garden winter letter morning silver village forest "
         "ladder pocket thunder basket mirror island feather castle blanket kettle ribbon "
         "pebble saddle tunnel whistle curtain marble anchor compass harvest cottage").split()


def _text(rng: random.Random, num_words: int) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(num_words)) + "."


def _documents() -> tuple[str, str]:
    """An old document, and a new one that repeats the old one's sentences (about 35 tokens
    each: long enough to hold one of the pool's anchored windows wherever they fall) between
    runs of new text of about 40 tokens: every run is shorter than a segment (64 tokens)."""
    rng = random.Random(7)
    common = [_text(rng, 26).capitalize() for _ in range(10)]
    old = " ".join(sentence + " " + _text(rng, 30) for sentence in common)
    new = " ".join(_text(rng, 30).capitalize() + " " + sentence for sentence in common)
    return old, new


@pytest.fixture(scope="module")
def policy():
    return load_policy()


def _messages(email: str, document: str) -> list[dict[str, str]]:
    return [{"role": "user", "content": f"{document}\n\nWhat does it say? I am {email}."}]


def test_a_new_document_with_short_reused_stretches_is_published(default_model, policy):
    model, tokenizer = default_model
    engine = Engine(model, tokenizer, policy, EngineConfig(publish_threshold=1))
    old, new = _documents()
    one = SamplingParams(max_new_tokens=1)
    engine.generate("early", _messages("ana.ruiz@example.net", old), one)

    writer = engine.generate("writer", _messages("marta.k@example.net", new), one)
    assert writer.num_private > 0  # isolated mode's private-free path
    reused = sum(end - start for start, end in writer.hit_spans)
    assert 10 * 16 <= reused < 0.6 * len(writer.private_mask), \
        "precondition: the writer reused the old sentences, and only them"
    assert writer.num_published_tokens > 0.8 * (len(writer.private_mask) - reused)

    reader = engine.generate("reader", _messages("li.wei@corp.example", new), one)
    text, _ = render_prompt(tokenizer, _messages("li.wei@corp.example", new), ())
    offsets = tokenizer.encode(text).offsets
    start = text.index(new)
    in_document = np.array([a >= start and b <= start + len(new) for a, b in offsets])
    hit = np.zeros(len(offsets), dtype=np.bool_)
    for first, end in reader.hit_spans:
        hit[first:end] = True
    assert hit[in_document].mean() > 0.9


def test_recomputed_tokens_of_a_reused_document_are_not_new_text(default_model, policy,
                                                                 monkeypatch):
    """A warm request reuses the document with a token marked for recomputation every 20
    tokens: those tokens are computed, but they are the pool's text, not new text, so the
    request publishes nothing and runs no private-free pass (a whole prefill's cost)."""
    from cacheprune.serving import admit

    model, tokenizer = default_model
    engine = Engine(model, tokenizer, policy, EngineConfig(publish_threshold=1))
    _, new = _documents()
    request = admit("r1", "reader", _messages("li.wei@corp.example", new), tokenizer, policy)
    assert request.num_private > 0
    text, _ = render_prompt(tokenizer, _messages("li.wei@corp.example", new), ())
    offsets = tokenizer.encode(text).offsets
    first = next(i for i, (a, _) in enumerate(offsets) if a >= text.index(new))
    last = max(i for i, (_, b) in enumerate(offsets) if b <= text.index(new) + len(new))
    full = model.prefill(PrefillPlan.full(torch.from_numpy(request.token_ids)))
    marks = torch.zeros(last - first, dtype=torch.bool)
    marks[::20] = True
    span = ReusedSpan(first, full.keys[:, :, first:last], full.values[:, :, first:last],
                      torch.arange(first, last), marks)
    plan = PrefillPlan(torch.from_numpy(request.token_ids), [span])
    request.attach_plan(plan, None)
    request.attach_prefill(engine.prefill(plan))
    assert request.prefill.num_recomputed >= (last - first) // 20  # precondition
    passes = count_private_free_passes(monkeypatch)
    with engine.session(request) as session:
        assert engine.publish(request, session) == []
    assert passes == []
