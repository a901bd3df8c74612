"""Dataset loading: QASPER, NarrativeQA, QMSum (grouped or LongBench files) and the default set."""

from __future__ import annotations

from eval.data.errors import DatasetError
from eval.data.loader import DATASETS, load_documents, project_data_dir
from eval.data.records import Document, Query

__all__ = ["DATASETS", "DatasetError", "Document", "Query", "load_documents", "project_data_dir"]
