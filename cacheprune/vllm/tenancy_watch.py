"""The leak monitor on vLLM's answers, run by the tenancy front (the connector never sees
decoded text; the front sees prompts and answers).

For each request the detection policy's mask tells which text of the prompt is private; the
own engine's `LeakMonitor` keeps it as keyed hashes under the request's tenant. Each answer is
checked against every other tenant's private text: a match raises the monitor's metrics
(`cacheprune_monitor_*`, on vLLM's `/metrics`) and writes a `leak_suspected` audit event.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterable, Iterator
from typing import Any

from cacheprune.detectors import DetectionPolicy
from cacheprune.models import ChatTokenizer
from cacheprune.monitor import LeakMonitor
from cacheprune.tokens import TokenIds, as_token_ids, true_runs

logger = logging.getLogger(__name__)


class AnswerWatch:
    """`remember` a request's prompt, then `check` its answer. Detection may be slow (NER):
    the front calls `remember` off its event loop, one call at a time."""

    def __init__(self, policy: DetectionPolicy, tokenizer: ChatTokenizer,
                 monitor: LeakMonitor) -> None:
        self._policy = policy
        self._tokenizer = tokenizer
        self.monitor = monitor

    def remember(self, tenant: str, prompt_texts: Iterable[str]) -> None:
        private: list[str] = []
        for text in prompt_texts:
            offsets = self._tokenizer.encode(text).offsets
            masked = self._policy.mask(text, offsets)
            if masked.detection.failed_closed:
                # NOTE: not the whole text: a shared document remembered as one tenant's would
                # flag every other tenant's answer about it.
                logger.warning("cacheprune front: detection failed on a prompt (%s); its "
                               "private text is not watched", masked.detection.reason)
                continue
            private += [text[offsets[start][0]:offsets[end - 1][1]]
                        for start, end in true_runs(masked.mask)]
        self.monitor.remember(tenant, private)

    def prompt_token_ids(self, prompt_texts: Iterable[str]) -> TokenIds:
        """The token ids of a request's prompt texts, one after the other (for the probe
        monitor, which compares a tenant's prompts with each other)."""
        ids = [token for text in prompt_texts for token in self._tokenizer.encode(text).ids]
        return as_token_ids(ids)

    def check(self, tenant: str, request_id: str, answers: Iterable[str]) -> int:
        """How many n-grams of the answers belong to other tenants' private text."""
        return sum(len(self.monitor.check(tenant, request_id, answer)) for answer in answers)


def prompt_texts(body: dict[str, Any]) -> list[str]:
    """The text a tenant sent: a completion's prompt(s), a chat's message contents."""
    texts: list[str] = []
    prompt = body.get("prompt")
    if isinstance(prompt, str):
        texts.append(prompt)
    elif isinstance(prompt, list):
        texts += [item for item in prompt if isinstance(item, str)]
    for message in body.get("messages") or []:
        if isinstance(message, dict):
            texts += _content_texts(message.get("content"))
    return texts


def answer_texts(body: bytes, streamed: bool) -> list[str]:
    """Each choice's text in a response body: one JSON object, or server-sent events whose
    chunks are joined per choice."""
    chunks = list(_events(body)) if streamed else [_json(body)]
    by_choice: dict[int, list[str]] = {}
    for chunk in chunks:
        for choice in (chunk or {}).get("choices") or []:
            text = choice.get("text")
            if text is None:
                text = (choice.get("delta") or choice.get("message") or {}).get("content")
            if isinstance(text, str):
                by_choice.setdefault(int(choice.get("index", 0)), []).append(text)
    return ["".join(parts) for _, parts in sorted(by_choice.items())]


def _content_texts(content: object) -> list[str]:
    if isinstance(content, str):
        return [content]
    if isinstance(content, list):
        return [part["text"] for part in content
                if isinstance(part, dict) and isinstance(part.get("text"), str)]
    return []


def _events(body: bytes) -> Iterator[dict[str, Any] | None]:
    for line in body.decode("utf-8", "replace").splitlines():
        if line.startswith("data:") and line[5:].strip() != "[DONE]":
            yield _json(line[5:].encode())


def _json(raw: bytes) -> dict[str, Any] | None:
    try:
        data = json.loads(raw)
    except json.JSONDecodeError:
        return None
    return data if isinstance(data, dict) else None
