"""Searching the pool with the prompt's public view: the public text between private values
and before the first one is reused whatever its length, the public prefix exactly; a warm
request that computes nothing publishable captures no attention; a publisher that reused the
template and a sentence of its document from the pool still publishes the whole document."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from serving_helpers import DOCUMENT as FERRY
from serving_helpers import pool_entries

from cacheprune.detectors import load_policy
from cacheprune.engine import PrefillPlan
from cacheprune.pool import Scope
from cacheprune.serving import Engine, EngineConfig, SamplingParams
from cacheprune.serving.prompt import render_prompt
from cacheprune.serving.request import ServedRequest

DOCUMENT = (
    "The hill tram climbs from the harbour to the old town every twelve minutes in summer. "
    "Prams and wheelchairs board at the front door, where the step folds down to the kerb. "
    "A day card covers the tram and the harbour boats, and children under six travel free "
    "when they sit on a lap; season cards are sold at the kiosk beside the lower station. "
) * 3
SYSTEM = "You answer questions about the tram."
PROFILES = {
    "a": ("Dana Reyes", "dana.reyes@example.org", "(415) 555-0142"),
    "b": ("Li Wei", "li.wei@corp.example", "(212) 555-0199"),
}
PARAMS = SamplingParams(max_new_tokens=4)


def _messages(tenant: str, document: str = DOCUMENT) -> list[dict[str, str]]:
    name, email, phone = PROFILES[tenant]
    return [{"role": "system", "content": SYSTEM},
            {"role": "user", "content": f"Hello, my name is {name}.\nEmail: {email}\n"
                                        f"Phone: {phone}\nPlease read this.\n\n{document}\n\n"
                                        "How often does the tram run?"}]


@pytest.fixture(scope="module")
def policy():
    return load_policy()


def _served(tokenizer, policy, tenant: str) -> ServedRequest:
    text, public = render_prompt(tokenizer, _messages(tenant), ())
    encoding = tokenizer.encode(text)
    return ServedRequest(f"check-{tenant}", tenant, np.asarray(encoding.ids, dtype=np.int64),
                         policy.mask(text, encoding.offsets, public).mask, None,
                         np.zeros(len(encoding.ids), dtype=bool))


@pytest.mark.parametrize("publish_mode", ["isolated", "paper_baseline"])
def test_public_text_between_private_values_is_reused(default_model, policy, publish_mode):
    model, tokenizer = default_model
    engine = Engine(model, tokenizer, policy,
                    EngineConfig(publish_threshold=1, publish_mode=publish_mode))
    engine.generate("a", _messages("a"), PARAMS)
    second = engine.generate("b", _messages("b"), PARAMS)
    request = _served(tokenizer, policy, "b")
    private = request.private
    assert private.sum() >= 6  # name, e-mail and phone
    hit = np.zeros(private.shape[0], dtype=bool)
    for start, end in second.hit_spans:
        hit[start:end] = True
    assert not (hit & private).any()
    # Every public token is served from the pool but the last one (always computed), whether
    # it sits before the first private value, between two of them or after the last.
    public = np.flatnonzero(~private)
    assert hit[public[:-1]].all()
    first_private = int(np.flatnonzero(private)[0])
    assert first_private < engine.config.annotator.min_len  # a prefix shorter than a segment


def test_the_public_prefix_is_reused_exactly(default_model, policy):
    """b shares only the prefix before its first private value with a: that part is reused,
    and b's first-token logits equal a full forward pass's."""
    model, tokenizer = default_model
    engine = Engine(model, tokenizer, policy, EngineConfig(publish_threshold=1))
    engine.generate("a", _messages("a"), PARAMS)
    other = [{"role": "system", "content": SYSTEM},
             {"role": "user", "content": "Hello, my name is Li Wei and I travel with a dog. "
                                         "What is the fare?"}]
    record = engine.generate("b", other, PARAMS)
    text, _ = render_prompt(tokenizer, other, ())
    ids = tokenizer.encode(text).ids
    first_private = int(np.flatnonzero(record.private_mask)[0])
    assert record.hit_spans == [(0, first_private)]
    full = engine.generate("b", other, SamplingParams(max_new_tokens=4))
    fresh = Engine(model, tokenizer, policy, EngineConfig(mode="no_sharing")).generate(
        "b", other, SamplingParams(max_new_tokens=4))
    assert record.text == full.text == fresh.text
    reference = model.prefill(PrefillPlan.full(torch.tensor(ids))).logits
    with engine.pool.session("check", Scope(engine.identity, "checker")) as session:
        request = ServedRequest("check", "b", np.asarray(ids, dtype=np.int64),
                                record.private_mask, None, np.zeros(len(ids), dtype=bool))
        plan = engine.strategy.plan(request, session)
        logits = model.prefill(plan).logits
    assert plan.reused_mask()[:first_private].all()
    torch.testing.assert_close(logits, reference, atol=1e-4, rtol=0)


def _worth_publishing(engine: Engine, request: ServedRequest, session) -> tuple[bool, PrefillPlan]:
    """The strategy's verdict on whether publishing the request could stage anything, after
    its plan and prefill (what `publish` asks first), and the plan."""
    strategy = engine.strategy
    plan = strategy.plan(request, session)
    request.attach_plan(plan, session.counted)
    request.attach_prefill(engine.prefill(plan))
    shareable = session.shareable_mask(strategy.search_view(request).num_tokens)
    return strategy.worth_publishing(request, request.prefill, shareable), plan


@pytest.mark.parametrize("publish_mode", ["isolated", "paper_baseline"])
def test_a_warm_request_does_no_publishing_work(default_model, policy, publish_mode):
    """A warm request computes no run of public tokens long enough to publish: its publish
    computes no attention and runs no private-free pass, while the cold request's does."""
    model, tokenizer = default_model
    engine = Engine(model, tokenizer, policy,
                    EngineConfig(publish_threshold=1, publish_mode=publish_mode))
    cold = _served(tokenizer, policy, "a")
    with engine.pool.session("cold", Scope(engine.identity, "a")) as session:
        assert _worth_publishing(engine, cold, session)[0]
    engine.generate("a", _messages("a"), PARAMS)
    warm = _served(tokenizer, policy, "b")
    with engine.pool.session("warm", Scope(engine.identity, "b")) as session:
        worth, plan = _worth_publishing(engine, warm, session)
        assert plan.reused  # the positive control: the plan does reuse
        assert not worth


def test_a_request_below_the_threshold_does_no_publishing_work(default_model, policy):
    """Under a threshold of 3 the first two tenants' requests have nothing shareable: their
    publish computes no attention and runs no private-free pass; the third tenant's does."""
    model, tokenizer = default_model
    engine = Engine(model, tokenizer, policy, EngineConfig(publish_threshold=3))
    verdicts = []
    for tenant, profile in (("t1", "a"), ("t2", "b"), ("t3", "a")):
        request = _served(tokenizer, policy, profile)  # the pool counts the session's tenant
        with engine.pool.session(tenant, Scope(engine.identity, tenant)) as session:
            verdicts.append(_worth_publishing(engine, request, session)[0])
    assert verdicts == [False, False, True]


def _hits_in_document(tokenizer, tenant: str, document: str,
                      hit_spans: list[tuple[int, int]]) -> np.ndarray:
    """Per token wholly inside the document's characters (plain string search): whether the
    pool served it."""
    text, _ = render_prompt(tokenizer, _messages(tenant, document), ())
    at = text.index(document)
    offsets = tokenizer.encode(text).offsets
    hit = np.zeros(len(offsets), dtype=bool)
    for start, end in hit_spans:
        hit[start:end] = True
    return np.array([hit[i] for i, (a, b) in enumerate(offsets)
                     if a >= at and b <= at + len(document)])


def test_a_publisher_that_reused_a_sentence_still_publishes_its_whole_document(
        default_model, policy):
    """a's second document holds a sentence of its first: its prefill reuses that sentence
    (and the template) from the pool, in the middle of text it computes. Neither the text
    before the sentence (shorter than a segment) nor the text after it (which leans on what
    came before) is a segment on its own; both are published with the sentence, so b finds
    every token of the document in the pool."""
    model, tokenizer = default_model
    engine = Engine(model, tokenizer, policy, EngineConfig(publish_threshold=1))
    shared = ("Lost umbrellas, gloves and scarves wait at the lower station office for thirty "
              "days before they go to the charity shop; ask the driver for a claim slip, which "
              "lists the tram number and the time you left it. ")
    sentences = DOCUMENT.split(". ")[:4]
    document = (". ".join(sentences[:2]) + ". " + shared + ". ".join(sentences[2:]) + ". "
                "On winter evenings the last tram leaves the old town at half past ten, and a "
                "night bus follows the same route until two. Ticket machines at both stations "
                "take coins, cards and phones, and print a receipt on request.")
    engine.generate("a", _messages("a", FERRY + shared), PARAMS)
    publisher = engine.generate("a", _messages("a", document), PARAMS)
    reused = _hits_in_document(tokenizer, "a", document, publisher.hit_spans)
    assert reused.sum() >= 32  # the positive control: the sentence came from the pool
    reader = engine.generate("b", _messages("b", document), PARAMS)
    served = _hits_in_document(tokenizer, "b", document, reader.hit_spans)
    assert served.all(), np.flatnonzero(~served)


@pytest.mark.parametrize("publish_mode", ["isolated", "paper_baseline"])
def test_a_short_common_prompt_start_is_an_entry_of_its_own(default_model, policy,
                                                           publish_mode):
    """Tenants who share the system prompt and the chat markup but open their notes
    differently have a common prompt start shorter than a segment. Once k = 2 of them sent it,
    it is an entry of its own, with the KV of a full prefill; a third tenant reuses exactly it
    and answers as full recomputation does."""
    model, tokenizer = default_model
    engine = Engine(model, tokenizer, policy,
                    EngineConfig(publish_threshold=2, publish_mode=publish_mode))
    system = ("You answer questions about the hill tram of the old town. Keep every answer "
              "short, polite and about the tram.")
    openings = {"a": "Dana here, with a question.", "b": "Good morning! Li writing again.",
                "c": "Sam once more; one last thing."}
    messages = {tenant: [{"role": "system", "content": system},
                         {"role": "user", "content": f"{opening}\n\n{DOCUMENT}\n\n"
                                                     "How often does the tram run?"}]
                for tenant, opening in openings.items()}
    ids = {tenant: tokenizer.encode(render_prompt(tokenizer, m, ())[0]).ids
           for tenant, m in messages.items()}
    common = 0
    while len({ids[t][common] for t in ids}) == 1:
        common += 1
    assert engine.config.match_window <= common < engine.config.annotator.min_len
    start = np.asarray(ids["a"][:common], dtype=np.int64)

    def prompt_starts() -> list[np.ndarray]:
        return [t for t in engine.pool.stored_token_ids() if np.array_equal(t, start)]

    engine.generate("a", messages["a"], PARAMS)
    assert prompt_starts() == []  # one sender of 2
    engine.generate("b", messages["b"], PARAMS)
    assert len(prompt_starts()) == 1
    (entry,) = [e for e in pool_entries(engine, start) if e[0] == 0]
    _, keys, values, positions, marks = entry
    assert keys.shape[2] == common and not marks.any()
    np.testing.assert_array_equal(positions, np.arange(common))
    full = model.prefill(PrefillPlan.full(torch.tensor(ids["b"])))
    torch.testing.assert_close(keys, full.keys[:, :, :common].to(keys.dtype), atol=1e-5, rtol=0)
    torch.testing.assert_close(values, full.values[:, :, :common].to(values.dtype), atol=1e-5,
                               rtol=0)

    third = engine.generate("c", messages["c"], PARAMS)
    assert third.hit_spans[0] == (0, common)
    fresh = Engine(model, tokenizer, policy, EngineConfig(mode="no_sharing"))
    assert third.text == fresh.generate("c", messages["c"], PARAMS).text
