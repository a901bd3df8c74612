"""Whole documents in the model's context (`--max-words 0`): a document is cut only where a
prompt about it would not fit, and just far enough; prompts are counted here with the real
tokenizer and chat template, independently of the fitting code."""

from __future__ import annotations

import dataclasses

import pytest

from eval.__main__ import main
from eval.data import load_documents, project_data_dir
from eval.workload import WorkloadConfig, WorkloadError, build_requests
from eval.workload.fit import describe_cuts, fit_to_context

NEW_TOKENS = 16


def _documents():
    return load_documents("default", project_data_dir())


def _counter(tokenizer):
    return lambda request: len(tokenizer.encode(tokenizer.render_chat(request.messages)).ids)


def _longest_by_document(requests, count):
    longest: dict[str, int] = {}
    for request in requests:
        longest[request.doc_id] = max(longest.get(request.doc_id, 0), count(request))
    return longest


def test_whole_documents_that_fit_are_not_cut(default_model):
    model, tokenizer = default_model
    config = WorkloadConfig(num_tenants=3, max_document_words=None, queries_per_document=2)
    documents = _documents()
    requests, cuts = fit_to_context(documents, config, _counter(tokenizer),
                                    model.config.max_context - NEW_TOKENS)
    assert cuts == []
    assert requests == build_requests(documents, config)
    assert "No document was cut" in describe_cuts(cuts, 3, 8176, 8192)


def test_a_document_longer_than_the_context_is_cut_just_enough(default_model):
    model, tokenizer = default_model
    count = _counter(tokenizer)
    short, *others = _documents()
    # The project's own handbook, ten times over: about 8,500 words, far past 8,192 tokens.
    long = dataclasses.replace(others[0], context="\n\n".join([others[0].context] * 10))
    documents = [short, long]
    config = WorkloadConfig(num_tenants=4, max_document_words=None, queries_per_document=3)
    limit = model.config.max_context - NEW_TOKENS
    requests, cuts = fit_to_context(documents, config, count, limit)

    longest = _longest_by_document(requests, count)
    assert max(longest.values()) <= limit
    # Cut just enough: the longest prompt about it ends within a few words of the limit.
    assert longest[long.doc_id] > limit - 24
    (cut,) = cuts
    assert (cut.doc_id, cut.num_words) == (long.doc_id, long.num_words)
    kept = [r for r in requests if r.doc_id == long.doc_id]
    document_text = "".join(kept[0].messages[1]["content"][start:end]
                            for _, start, end in kept[0].document_char_ranges)
    assert long.context.startswith(document_text) and len(document_text.split()) == (
        cut.num_words_kept)
    assert long.context[len(document_text)].isspace()  # cut at a word end
    # The document that fits is served whole, exactly as without fitting.
    untouched = [r for r in requests if r.doc_id == short.doc_id]
    assert untouched == [r for r in build_requests(documents, config) if r.doc_id == short.doc_id]
    sentence = describe_cuts(cuts, 2, limit, model.config.max_context)
    assert sentence.startswith("1 of 2 documents were cut to fit the model's context (8,192")
    assert f"{long.doc_id} to {cut.num_words_kept:,} of {long.num_words:,} words" in sentence


def test_a_context_too_short_for_the_template_is_refused(default_model):
    _, tokenizer = default_model
    config = WorkloadConfig(num_tenants=2, max_document_words=None, queries_per_document=1)
    with pytest.raises(WorkloadError, match="the model's context is too short"):
        fit_to_context(_documents(), config, _counter(tokenizer), 100)


def test_negative_max_words_is_refused_before_the_model_loads(capsys):
    assert main(["--max-words", "-3"]) == 2
    assert "--max-words must be 0 (whole documents) or a positive number" in (
        capsys.readouterr().err)
