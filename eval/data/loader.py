"""`load_documents`: the documents of one dataset, from either file format, grouped by context."""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from pathlib import Path

from eval.data.errors import DatasetError
from eval.data.records import Document, Query
from eval.data.rows import Row, grouped_queries, is_grouped, longbench_query, read_rows, text_field

DATASETS = ("qasper", "narrativeqa", "qmsum", "default")


def project_data_dir() -> Path:
    """The project's own `datasets/` folder, which holds the shipped default workload."""
    return Path(__file__).resolve().parents[2] / "datasets"


def load_documents(
    dataset: str,
    data_dir: Path,
    max_docs: int | None = None,
    *,
    files: Sequence[str] | None = None,
) -> list[Document]:
    """The documents of `dataset` under `data_dir/<dataset>/`, in file order.

    Reads every `*.jsonl` in that folder (sorted by name) unless `files` names some of them.
    Each file may be grouped (one row per document) or LongBench-shaped (one row per question;
    rows with an identical context become one document, its questions in row order). A
    LongBench document's id is `<file stem>-<first 12 hex digits of SHA-256(context)>`, stable
    across runs and machines.
    """
    if dataset not in DATASETS:
        raise DatasetError(f"unknown dataset {dataset!r}; available: {', '.join(DATASETS)}")
    if max_docs is not None and max_docs < 1:
        raise DatasetError(f"max_docs must be at least 1 (or None for all), got {max_docs}")
    folder = Path(data_dir) / dataset
    paths = _data_files(folder, files)
    documents: list[Document] = []
    seen: dict[str, str] = {}
    for path in paths:
        for document in _read_file(path, dataset):
            if document.doc_id in seen:
                raise DatasetError(
                    f"{document.source}: doc_id {document.doc_id!r} already used at "
                    f"{seen[document.doc_id]}"
                )
            seen[document.doc_id] = document.source
            documents.append(document)
    return documents if max_docs is None else documents[:max_docs]


def _data_files(folder: Path, files: Sequence[str] | None) -> list[Path]:
    if not folder.is_dir():
        raise DatasetError(f"{folder}: dataset folder not found")
    if files is None:
        paths = sorted(folder.glob("*.jsonl"))
        if not paths:
            raise DatasetError(f"{folder}: no *.jsonl data files")
        return paths
    if not files:
        raise DatasetError(f"{folder}: 'files' is empty; pass None to read every *.jsonl")
    for name in files:
        if Path(name).name != name:
            raise DatasetError(f"{folder}: data file {name!r} must be a plain file name")
    return [folder / name for name in files]


def _read_file(path: Path, dataset: str) -> list[Document]:
    rows = list(read_rows(path))
    if not rows:
        raise DatasetError(f"{path}: no rows")
    file_is_grouped = is_grouped(rows[0])
    for row in rows:
        if is_grouped(row) != file_is_grouped:
            shape = "grouped ('queries')" if file_is_grouped else "LongBench ('input')"
            raise DatasetError(f"{row.where()}: row shape differs from line 1, which is {shape}")
    if file_is_grouped:
        return [_grouped_document(row, dataset) for row in rows]
    return _longbench_documents(rows, dataset)


def _grouped_document(row: Row, dataset: str) -> Document:
    return Document(
        doc_id=text_field(row, row.data, "doc_id"),
        dataset=dataset,
        context=text_field(row, row.data, "context"),
        queries=grouped_queries(row),
        source=f"{row.path.name}:{row.line_no}",
    )


def _longbench_documents(rows: list[Row], dataset: str) -> list[Document]:
    # NOTE: grouping by exact context text, not by a row id: LongBench repeats the same context
    # once per question, and the ids in the shared copies are per-question hashes.
    queries_by_context: dict[str, list[Query]] = {}
    first_row: dict[str, Row] = {}
    for row in rows:
        context = text_field(row, row.data, "context")
        queries_by_context.setdefault(context, []).append(longbench_query(row))
        first_row.setdefault(context, row)
    documents = []
    for context, queries in queries_by_context.items():
        row = first_row[context]
        digest = hashlib.sha256(context.encode("utf-8")).hexdigest()[:12]
        documents.append(
            Document(
                doc_id=f"{row.path.stem}-{digest}",
                dataset=dataset,
                context=context,
                queries=queries,
                source=f"{row.path.name}:{row.line_no}",
            )
        )
    return documents
