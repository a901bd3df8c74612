"""Multi-tenant requests: ground-truth spans, placements, sharing, determinism, re-rendering."""

from __future__ import annotations

import random

import pytest

from eval.data import Document, Query, load_documents, project_data_dir
from eval.workload import (
    Request,
    WorkloadConfig,
    WorkloadError,
    build_requests,
    note_boundary,
    truncate_text,
)

DOCUMENT_INTRO = "Please read the following document and answer my question.\n\n"


@pytest.fixture(scope="module")
def default_documents() -> list[Document]:
    return load_documents("default", project_data_dir())


@pytest.fixture(scope="module")
def requests(default_documents: list[Document]) -> list[Request]:
    return build_requests(default_documents, WorkloadConfig(num_tenants=3, seed=7,
                                                            max_document_words=None))


def _user(request: Request) -> str:
    return request.messages[1]["content"]


def test_private_spans_are_the_inserted_values(requests: list[Request]) -> None:
    for request in requests:
        assert [m["role"] for m in request.messages] == ["system", "user"]
        found = [request.messages[i]["content"][s:e] for i, s, e in request.private_char_spans]
        assert found == request.private_values
        assert request.private_values == list(request.slot_values.values())


def test_private_values_are_unique_and_absent_from_documents(
    requests: list[Request], default_documents: list[Document]
) -> None:
    # A profile is the tenant's own, so its values repeat only within that tenant.
    owner: dict[str, str] = {}
    for request in requests:
        for value in request.private_values:
            assert owner.setdefault(value, request.tenant) == request.tenant, value
            assert not any(value in document.context for document in default_documents)


def test_private_details_before_inside_and_after_the_document(requests: list[Request]) -> None:
    for request in requests:
        user = _user(request)
        document_start = user.index(DOCUMENT_INTRO) + len(DOCUMENT_INTRO)
        (_, _, document_end) = request.document_char_ranges[-1]
        spans = dict(zip(request.template.slot_names, request.private_char_spans, strict=True))
        where = {name: info.placement for name, info in request.slots.items()}
        assert set(where.values()) == {"before", "inside", "after"}
        for name, (_, start, end) in spans.items():
            expected = ("before" if end <= document_start else
                        "after" if start >= document_end else "inside")
            assert where[name] == expected, (request.request_id, name)
        assert request.question in user[document_end:]


def test_private_share_is_near_the_target(requests: list[Request]) -> None:
    for request in requests:
        private_chars = sum(len(value) for value in request.private_values)
        assert 0.015 <= private_chars / len(_user(request)) <= 0.035, request.request_id
        assert request.private_fraction == pytest.approx(private_chars / len(_user(request)))


def test_document_text_is_identical_for_every_tenant(
    requests: list[Request], default_documents: list[Document]
) -> None:
    contexts = {d.doc_id: d.context for d in default_documents}
    for request in requests:
        user = _user(request)
        ranges = request.document_char_ranges
        without_note = "".join(user[start:end] for _, start, end in ranges)
        # Documents are served whole here: the whole text is there.
        assert without_note == contexts[request.doc_id]
        assert request.messages[0] == requests[0].messages[0]


def test_every_document_is_asked_by_several_tenants(requests: list[Request]) -> None:
    tenants_by_document: dict[str, set[str]] = {}
    for request in requests:
        tenants_by_document.setdefault(request.doc_id, set()).add(request.tenant)
    assert all(len(tenants) >= 2 for tenants in tenants_by_document.values())
    assert {r.tenant for r in requests} == {"tenant-00", "tenant-01", "tenant-02"}


def test_same_seed_same_requests_other_seed_other_values(
    default_documents: list[Document], requests: list[Request]
) -> None:
    again = build_requests(default_documents, WorkloadConfig(num_tenants=3, seed=7,
                                                             max_document_words=None))
    assert [r.messages for r in again] == [r.messages for r in requests]
    other = build_requests(default_documents, WorkloadConfig(num_tenants=3, seed=8))
    assert other[0].private_values != requests[0].private_values


def test_template_rerenders_the_prompt_and_a_guess(requests: list[Request]) -> None:
    request = requests[4]
    rendered = request.template.render(request.slot_values)
    assert rendered.messages == request.messages
    slot = request.template.slot_names[-1]
    guess = dict(request.slot_values, **{slot: "guess@example.org"})
    guessed_user = request.template.render(guess).messages[1]["content"]
    _, start, end = request.private_char_spans[-1]
    assert guessed_user == _user(request)[:start] + "guess@example.org" + _user(request)[end:]
    before = request.template.user_text_before(slot, request.slot_values)
    assert before == _user(request)[:start]
    with pytest.raises(ValueError, match="missing"):
        request.template.render({})


def test_public_ranges_cover_the_document_and_no_private_value(
    default_documents: list[Document],
) -> None:
    config = WorkloadConfig(num_tenants=2, documents_public=True, queries_per_document=2,
                            max_document_words=None)
    built = build_requests(default_documents, config)
    assert len(built) == 6
    contexts = {d.doc_id: d.context for d in default_documents}
    for request in built:
        pieces = [request.messages[i]["content"][s:e] for i, s, e in request.public_char_ranges]
        assert "".join(pieces) == contexts[request.doc_id]
        for _, p_start, p_end in request.private_char_spans:
            assert all(p_end <= s or p_start >= e for _, s, e in request.public_char_ranges)
    assert all(
        r.public_char_ranges == [] for r in build_requests(default_documents[:1], WorkloadConfig())
    )


def test_truncation_cuts_at_word_ends_and_keeps_layout() -> None:
    text = "Alpha beta\n\ngamma  delta epsilon"
    assert truncate_text(text, 3, None) == "Alpha beta\n\ngamma"
    assert truncate_text(text, None, 14) == "Alpha beta"  # 'gamma' would end at 17
    assert truncate_text(text, None, 17) == "Alpha beta\n\ngamma"
    assert truncate_text(text, 2, 100) == "Alpha beta"
    assert truncate_text(text, None, None) == text
    assert truncate_text("Supercalifragilistic", None, 5) == "Super"
    with pytest.raises(WorkloadError, match="max_document_words"):
        truncate_text(text, 0, None)


def test_long_documents_are_cut_to_the_configured_words() -> None:
    words = [f"w{i}" for i in range(300)]
    text = "\n".join(" ".join(words[i : i + 10]) for i in range(0, 300, 10))
    document = Document("long", "default", text, [Query("What?", ["w1"])])
    (request,) = build_requests([document], WorkloadConfig(max_document_words=50))
    public = build_requests(
        [document], WorkloadConfig(max_document_words=50, documents_public=True)
    )[0]
    pieces = "".join(public.messages[i]["content"][s:e] for i, s, e in public.public_char_ranges)
    assert pieces.split() == words[:50]
    assert "w50" not in _user(request)


def test_note_boundary_prefers_lines_then_sentences() -> None:
    rng = random.Random(0)
    text = "First line here.\nSecond line here.\nThird line here.\nFourth line."
    position, separator = note_boundary(text, rng)
    assert separator == "\n" and text[position - 1] == "\n"
    prose = "One sentence here. Two sentences here. Three sentences here. Four here."
    position, separator = note_boundary(prose, rng)
    assert separator == " " and prose[position - 2 : position] == ". "
    with pytest.raises(WorkloadError, match="no line or sentence boundary"):
        note_boundary("just some words without any boundary at all", rng)


def test_bad_settings_are_refused() -> None:
    with pytest.raises(WorkloadError, match="num_tenants"):
        WorkloadConfig(num_tenants=0)
    with pytest.raises(WorkloadError, match="tenants_per_query"):
        WorkloadConfig(num_tenants=2, tenants_per_query=3)
    with pytest.raises(WorkloadError, match="no documents"):
        build_requests([], WorkloadConfig())
    document = Document("flat", "default", "no boundary in this text at all", [Query("q", ["a"])])
    with pytest.raises(WorkloadError, match="document 'flat'"):
        build_requests([document], WorkloadConfig())
