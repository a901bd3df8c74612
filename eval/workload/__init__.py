"""Multi-tenant workloads: tenants share documents and keep private details in their prompts."""

from __future__ import annotations

from eval.workload.builder import PLACEMENTS, Request, SlotInfo, WorkloadConfig, build_requests
from eval.workload.document import WorkloadError, note_boundary, truncate_text
from eval.workload.prompt import SYSTEM_PROMPT
from eval.workload.template import (
    SYSTEM_MESSAGE_INDEX,
    USER_MESSAGE_INDEX,
    CharSpan,
    PromptTemplate,
    RenderedPrompt,
    Slot,
    Text,
)

__all__ = [
    "PLACEMENTS",
    "SYSTEM_MESSAGE_INDEX",
    "SYSTEM_PROMPT",
    "USER_MESSAGE_INDEX",
    "CharSpan",
    "PromptTemplate",
    "RenderedPrompt",
    "Request",
    "Slot",
    "SlotInfo",
    "Text",
    "WorkloadConfig",
    "WorkloadError",
    "build_requests",
    "note_boundary",
    "truncate_text",
]
