"""Dataset loaders on fixtures written here, on the shared copies (counts from their README),
and on the project's own default workload."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from pathlib import Path

import pytest

from eval.data import DatasetError, Document, Query, load_documents, project_data_dir

SHARED_DATA = Path(__file__).resolve().parents[3] / "shared" / "datasets"


def _write_jsonl(path: Path, rows: Sequence[object]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")


def test_grouped_rows_become_documents(tmp_path: Path) -> None:
    _write_jsonl(
        tmp_path / "qmsum" / "meetings.jsonl",
        [
            {"doc_id": "m1", "context": "Chair: hello.", "length": 2, "split": "val",
             "queries": [{"type": "general", "input": "Who spoke?", "answers": ["the chair"]}]},
            {"doc_id": "m2", "context": "Clerk: bye.", "length": 2,
             "queries": [{"input": "Q1?", "answers": ["a", "b"]},
                         {"input": "Q2?", "answers": ["c"]}]},
        ],
    )  # fmt: skip
    documents = load_documents("qmsum", tmp_path)
    assert documents == [
        Document("m1", "qmsum", "Chair: hello.", [Query("Who spoke?", ["the chair"], "general")],
                 "meetings.jsonl:1"),
        Document("m2", "qmsum", "Clerk: bye.", [Query("Q1?", ["a", "b"]), Query("Q2?", ["c"])],
                 "meetings.jsonl:2"),
    ]  # fmt: skip
    assert [d.doc_id for d in load_documents("qmsum", tmp_path, max_docs=1)] == ["m1"]


def test_longbench_rows_are_grouped_by_identical_context(tmp_path: Path) -> None:
    story_a, story_b = "Once there was a lighthouse.", "A fox crossed the river."
    rows = [
        {"input": "What was there?", "context": story_a, "answers": ["a lighthouse"], "_id": "1"},
        {"input": "Who crossed?", "context": story_b, "answers": ["a fox"], "_id": "2"},
        {"input": "Once what?", "context": story_a, "answers": ["there was"], "_id": "3"},
    ]
    _write_jsonl(tmp_path / "narrativeqa" / "stories.jsonl", rows)
    documents = load_documents("narrativeqa", tmp_path)
    digest_a = hashlib.sha256(story_a.encode()).hexdigest()[:12]
    assert [d.doc_id for d in documents] == [
        f"stories-{digest_a}",
        f"stories-{hashlib.sha256(story_b.encode()).hexdigest()[:12]}",
    ]
    assert [q.question for q in documents[0].queries] == ["What was there?", "Once what?"]
    assert documents[0].source == "stories.jsonl:1" and documents[1].source == "stories.jsonl:2"


def test_files_option_and_sorted_file_order(tmp_path: Path) -> None:
    row = {"input": "q?", "answers": ["x"]}
    _write_jsonl(
        tmp_path / "qasper" / "b.jsonl", [{"doc_id": "b", "context": "B", "queries": [row]}]
    )
    _write_jsonl(
        tmp_path / "qasper" / "a.jsonl", [{"doc_id": "a", "context": "A", "queries": [row]}]
    )
    assert [d.doc_id for d in load_documents("qasper", tmp_path)] == ["a", "b"]
    assert [d.doc_id for d in load_documents("qasper", tmp_path, files=["b.jsonl"])] == ["b"]
    with pytest.raises(DatasetError, match=r"c\.jsonl: data file not found"):
        load_documents("qasper", tmp_path, files=["c.jsonl"])
    with pytest.raises(DatasetError, match="plain file name"):
        load_documents("qasper", tmp_path, files=["../a.jsonl"])


@pytest.mark.parametrize(
    ("lines", "message"),
    [
        (['{"doc_id": "a", "context": "x", "queries": [{"input": "q", "answers": ["y"]}]}',
          "{oops"], r"bad\.jsonl:2: not valid JSON"),
        (["[1, 2]"], r"bad\.jsonl:1: a row must be a JSON object"),
        (['{"doc_id": "a", "context": "", "queries": []}'], r"bad\.jsonl:1: field 'context'"),
        (['{"doc_id": "a", "context": "x", "queries": [{"input": "q", "answers": ["y"]}, '
          '{"input": "q2", "answers": []}]}'], r"bad\.jsonl:1: field 'queries\[1\]\.answers'"),
        (['{"doc_id": "a", "context": "x", "queries": [{"input": "q", "answers": ["y"]}]}',
          '{"input": "q", "context": "x", "answers": ["y"]}'], r"bad\.jsonl:2: row shape differs"),
        (['{"input": "q", "context": "x", "answers": "y"}'], r"bad\.jsonl:1: field 'answers'"),
        (['{"doc_id": "a", "context": "x", "queries": [{"input": "q", "answers": ["y"]}]}',
          '{"doc_id": "a", "context": "z", "queries": [{"input": "q", "answers": ["y"]}]}'],
         r"bad\.jsonl:2: doc_id 'a' already used at bad\.jsonl:1"),
    ],
)  # fmt: skip
def test_malformed_rows_name_file_line_and_field(
    tmp_path: Path, lines: list[str], message: str
) -> None:
    path = tmp_path / "qasper" / "bad.jsonl"
    path.parent.mkdir()
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    with pytest.raises(DatasetError, match=message):
        load_documents("qasper", tmp_path)


def test_bad_arguments_and_missing_folders(tmp_path: Path) -> None:
    with pytest.raises(DatasetError, match="unknown dataset 'squad'; available: qasper"):
        load_documents("squad", tmp_path)
    with pytest.raises(DatasetError, match="dataset folder not found"):
        load_documents("qmsum", tmp_path)
    (tmp_path / "qmsum").mkdir()
    with pytest.raises(DatasetError, match=r"no \*\.jsonl data files"):
        load_documents("qmsum", tmp_path)
    with pytest.raises(DatasetError, match="max_docs must be at least 1"):
        load_documents("qmsum", tmp_path, max_docs=0)


@pytest.mark.skipif(not SHARED_DATA.is_dir(), reason="../shared/datasets is not on this machine")
@pytest.mark.parametrize(
    ("dataset", "num_documents", "num_queries"),
    # From ../shared/datasets/README.md; NarrativeQA: 6 stories + 47 distinct summaries
    # holding 50 questions.
    [("qasper", 20, 152), ("qmsum", 35, 272), ("narrativeqa", 53, 56)],
)
def test_shared_copies_load_with_their_documented_counts(
    dataset: str, num_documents: int, num_queries: int
) -> None:
    documents = load_documents(dataset, SHARED_DATA)
    assert len(documents) == num_documents
    assert sum(len(d.queries) for d in documents) == num_queries
    assert len({d.doc_id for d in documents}) == num_documents


def test_default_workload_is_three_original_documents_with_literal_answers() -> None:
    documents = load_documents("default", project_data_dir())
    assert len(documents) == 3
    for document in documents:
        assert 2_400 <= document.num_words <= 2_700, document.doc_id
        assert 4 <= len(document.queries) <= 5, document.doc_id
        for query in document.queries:
            # The first reference is always a literal phrase of the document.
            assert query.answers[0].lower() in document.context.lower(), query.question


def test_default_documents_hold_nothing_the_shipped_rules_call_private() -> None:
    from cacheprune.detectors import load_policy

    policy = load_policy()
    for document in load_documents("default", project_data_dir()):
        result = policy.chain.run(document.context)
        assert not result.failed_closed
        assert result.spans == [], document.doc_id
