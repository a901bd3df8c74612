"""The oracle bound computes exactly the tokens no sharing scheme could serve, checked against
a brute-force derivation from the workload's ground truth (character by character, every
token against every earlier token), and with the request's own KV gives full recomputation's
first token."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from cacheprune.detectors import load_policy
from cacheprune.engine import PrefillPlan
from cacheprune.serving import Engine, EngineConfig, SamplingParams, mask_prompt
from cacheprune.serving.known_clean import KnownCleanText
from eval.bound import BoundRecord, KeepReferenceKV, OracleBound, prompt_sources, share_of_bound
from eval.data import load_documents, project_data_dir
from eval.workload import WorkloadConfig, build_requests

PRIVATE, QUESTION = "private", "question"


def _workload():
    documents = load_documents("default", project_data_dir())[:2]
    # Two documents, each asked by three tenants: the second and third askers are warm. (At 300
    # words the document outweighs the private details, the template and the question.)
    config = WorkloadConfig(num_tenants=3, max_document_words=300, queries_per_document=1,
                            tenants_per_query=3)
    return build_requests(documents, config)


def _char_identities(text, request):
    """Per character of the rendered prompt: PRIVATE, QUESTION, ("d", doc, offset) for
    document text, or ("t", text since the last non-template character) for the rest."""
    user = request.messages[1]["content"]
    user_start = text.index(user, text.index(request.messages[0]["content"]))
    label: dict[int, object] = {}
    offset = 0
    for _, start, end in request.document_char_ranges:
        for c in range(start, end):
            label[user_start + c] = ("d", request.doc_id, offset)
            offset += 1
    for _, start, end in request.private_char_spans:
        for c in range(start, end):
            label[user_start + c] = PRIVATE
    question_start = user_start + user.rfind(request.question)
    for c in range(question_start, question_start + len(request.question)):
        label[c] = QUESTION
    identities = []
    stretch_start = 0
    for c in range(len(text)):
        if c in label:
            identities.append(label[c])
            stretch_start = c + 1
        else:
            identities.append(("t", text[stretch_start:c + 1]))
    return identities


def _brute_force_must_compute(tokenizer, requests, masks):
    """For each request: which tokens no earlier request carried as a public token of the same
    id over characters of the same identities."""
    # token id -> identities of the characters of each earlier request's public token of that id
    seen: dict[int, list[list[object]]] = {}
    result = []
    for request, mask in zip(requests, masks, strict=True):
        text = tokenizer.render_chat(request.messages)
        encoding = tokenizer.encode(text)
        identities = _char_identities(text, request)
        tokens = [(token_id, identities[start:end])
                  for token_id, (start, end) in zip(encoding.ids, encoding.offsets, strict=True)]
        compute = np.zeros(len(tokens), dtype=bool)
        for position, (token_id, chars) in enumerate(tokens):
            is_public = not any(c in (PRIVATE, QUESTION) for c in chars)
            carried = any(chars == other for other in seen.get(token_id, []))
            compute[position] = not (is_public and carried) or bool(mask[position])
        compute[-1] = True
        result.append(compute)
        for position, (token_id, chars) in enumerate(tokens):
            if not mask[position] and not any(c in (PRIVATE, QUESTION) for c in chars):
                seen.setdefault(token_id, []).append(chars)
    return result


@pytest.fixture(scope="module")
def served(default_model):
    model, tokenizer = default_model
    policy = load_policy()
    requests = _workload()
    oracle = OracleBound(model, tokenizer, policy)
    documents_seen = set()
    for request in requests:
        oracle.serve(request, warm=request.doc_id in documents_seen)
        documents_seen.add(request.doc_id)
    # The masks as the engine makes them: detection skips what the threshold's tenants (here
    # one) sent clean before (`EngineConfig.skip_known_clean`).
    known = KnownCleanText(threshold=1)
    masks = []
    for request in requests:
        text = tokenizer.render_chat(request.messages)
        masks.append(mask_prompt(request.request_id, request.tenant, text,
                                 tokenizer.encode(text), policy, (), known).private)
    return requests, oracle, masks


def test_the_bound_computes_exactly_the_brute_force_must_compute_set(served, default_model):
    _, tokenizer = default_model
    requests, oracle, masks = served
    expected = _brute_force_must_compute(tokenizer, requests, masks)
    warm = [i for i, r in enumerate(requests) if r.request_id in oracle.records]
    assert len(warm) == len(requests) - 2  # the first request of each document is cold
    for i in warm:
        record = oracle.records[requests[i].request_id]
        assert record.computed_positions.tolist() == np.flatnonzero(expected[i]).tolist()
        # Most of a warm prompt is reused; private values and the question are not.
        assert record.num_computed < 0.35 * record.num_prompt_tokens
    # The ground truth's private tokens are all among the computed ones.
    for i in warm:
        sources = prompt_sources(tokenizer, requests[i])
        private = [p for p, key in enumerate(sources.keys) if key is None]
        assert set(private) <= set(oracle.records[requests[i].request_id]
                                   .computed_positions.tolist())


def test_the_bound_reuses_the_requests_own_kv(served, default_model):
    model, tokenizer = default_model
    requests, oracle, _ = served
    for request in requests:
        record = oracle.records.get(request.request_id)
        if record is None:
            continue
        ids = prompt_sources(tokenizer, request).token_ids
        full = model.prefill(PrefillPlan.full(torch.from_numpy(ids)))
        assert record.first_token == int(full.logits.argmax())


def test_the_no_sharing_systems_kv_stands_in_for_the_bounds_own_prefill(served, default_model):
    model, tokenizer = default_model
    requests, oracle, _ = served
    policy = load_policy()
    keep = KeepReferenceKV()
    engine = Engine(model, tokenizer, policy, EngineConfig(mode="no_sharing"), strategy=keep)
    second = OracleBound(model, tokenizer, policy)
    documents_seen: set[str] = set()
    for request in requests:
        warm = request.doc_id in documents_seen
        if warm:
            engine.generate(request.tenant, request.messages, SamplingParams(max_new_tokens=2),
                            request.public_char_ranges)
        second.serve(request, warm, reference=keep.take() if warm else None)
        documents_seen.add(request.doc_id)
    assert second.records.keys() == oracle.records.keys()
    for request_id, record in second.records.items():
        own = oracle.records[request_id]
        assert record.computed_positions.tolist() == own.computed_positions.tolist()
        assert record.first_token == own.first_token
    # The KV of another prompt is refused with a message, not used.
    warm_request = next(r for r in requests if r.request_id in oracle.records)
    engine.generate(requests[0].tenant, requests[0].messages, SamplingParams(max_new_tokens=1),
                    requests[0].public_char_ranges)
    with pytest.raises(ValueError, match="another prompt"):
        second.serve(warm_request, warm=True, reference=keep.take())


def test_share_of_the_bound_is_the_median_of_per_request_ratios():
    def record(request_id, ttft):
        return BoundRecord(request_id, ttft, 100, np.arange(10), 0)

    bound = {"a": record("a", 1.0), "b": record("b", 1.0), "c": record("c", 3.0)}
    # a: 1/2, b: 1/4, c: 3/3 (the cold request "z" has no bound)
    assert share_of_bound(bound, {"a": 2.0, "b": 4.0, "c": 3.0, "z": 9.0}) == 0.5
    assert share_of_bound({}, {"z": 9.0}) is None
