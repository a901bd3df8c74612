"""Fixtures shared by the evaluation's tests."""

from __future__ import annotations

import pytest

from eval.data import load_documents, project_data_dir
from eval.workload import Request, WorkloadConfig, build_requests


@pytest.fixture(scope="module")
def victim() -> Request:
    """One tenant's request about a 150-word cut of the first default document (seed 3)."""
    documents = load_documents("default", project_data_dir(), max_docs=1)
    requests = build_requests(documents, WorkloadConfig(num_tenants=1, queries_per_document=1,
                                                        max_document_words=150, seed=3))
    return requests[0]
