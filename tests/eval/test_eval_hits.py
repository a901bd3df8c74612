"""Document hit counting: which prompt tokens are the document's, and how many of them a
second tenant got from the pool."""

from __future__ import annotations

import numpy as np

from cacheprune.detectors import load_policy
from cacheprune.serving import Engine, EngineConfig, SamplingParams
from cacheprune.serving.prompt import render_prompt
from eval.data import load_documents, project_data_dir
from eval.hits import count_document_hits, document_token_mask
from eval.workload import WorkloadConfig, build_requests


def _requests():
    documents = load_documents("default", project_data_dir(), max_docs=1)
    return build_requests(documents, WorkloadConfig(num_tenants=2, queries_per_document=2,
                                                    max_document_words=200))


def test_document_tokens_spell_the_document(default_model):
    _, tokenizer = default_model
    request = _requests()[0]
    text, _ = render_prompt(tokenizer, request.messages, ())
    encoding = tokenizer.encode(text)
    mask = document_token_mask(tokenizer, request)
    pieces = [request.messages[1]["content"][start:end]
              for _, start, end in request.document_char_ranges]
    covered = "".join(text[a:b] for (a, b), inside in zip(encoding.offsets, mask, strict=True)
                      if inside)
    # every document token is document text, and the document's text is nearly all covered
    # (a token straddling a piece's edge, such as a leading space, is left out)
    assert covered.replace(" ", "") in "".join(pieces).replace(" ", "")
    assert len(covered) >= sum(len(p) for p in pieces) - 4 * len(pieces)


def test_second_tenant_hits_are_counted_on_document_tokens(default_model):
    model, tokenizer = default_model
    first, second = _requests()[:2]
    assert first.tenant != second.tenant and first.doc_id == second.doc_id
    engine = Engine(model, tokenizer, load_policy(), EngineConfig(publish_threshold=1))
    params = SamplingParams(max_new_tokens=1)
    cold = engine.generate(first.tenant, first.messages, params)
    warm = engine.generate(second.tenant, second.messages, params)

    cold_hits, cold_tokens = count_document_hits(tokenizer, first, cold)
    hits, tokens = count_document_hits(tokenizer, second, warm)
    assert cold_hits == 0 and cold_tokens > 100
    document = document_token_mask(tokenizer, second) & ~warm.private_mask
    assert tokens == int(document.sum())
    # hits on document tokens never exceed all hits, and most of the document was reused
    assert hits <= warm.num_hit_tokens
    assert hits >= 0.5 * tokens
    expected = sum(int(document[a:b].sum()) for a, b in warm.hit_spans)
    assert hits == expected
    assert not np.any(warm.private_mask[np.concatenate(
        [np.arange(a, b) for a, b in warm.hit_spans])])
