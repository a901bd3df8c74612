"""How many prompt tokens the shared pool served a request, for the tenancy front's response
header: read from the connector's request log (`request_log`, written by vLLM's worker).

The front gives each request its own id (vLLM's `X-Request-Id`), which vLLM keeps inside its
engine request ids ("cmpl-<id>-0-<suffix>", "chatcmpl-<id>-<suffix>"); the log's prefill lines
for those ids say what the pool served. A prefill line is written before vLLM's forward pass
of that step, so it is in the log by the time the request's first token reaches the front.
"""

from __future__ import annotations

import json
import logging
import os
import re
import uuid
from collections import OrderedDict

logger = logging.getLogger(__name__)

_FRONT_ID = re.compile(r"[0-9a-f]{32}")
MAX_UNCLAIMED = 10_000  # counts kept for requests the front has not asked about (memory bound)


def new_front_id() -> str:
    """An id that no client chose (32 hex digits, found again in vLLM's request ids)."""
    return uuid.uuid4().hex


class PooledTokens:
    """Tails the request log; `take(front_id)` returns the pooled tokens of that request's
    prefills so far (summed over its choices, and again after a preemption) and forgets them.
    Not thread-safe: called from the server's event loop only."""

    def __init__(self, request_log_path: str) -> None:
        self._path = request_log_path
        self._offset = 0
        self._partial = b""
        self._counts: OrderedDict[str, int] = OrderedDict()

    def take(self, front_id: str) -> int:
        self._read_new_lines()
        return self._counts.pop(front_id, 0)

    def _read_new_lines(self) -> None:
        try:
            with open(self._path, "rb") as log:
                if os.fstat(log.fileno()).st_size < self._offset:
                    self._offset, self._partial = 0, b""  # the operator truncated the log
                log.seek(self._offset)
                chunk = log.read()
        except FileNotFoundError:
            return  # nothing prefilled yet
        self._offset += len(chunk)
        *lines, self._partial = (self._partial + chunk).split(b"\n")
        for line in lines:
            self._count(line)

    def _count(self, line: bytes) -> None:
        try:
            event = json.loads(line)
        except json.JSONDecodeError:
            logger.warning("cacheprune front: skipped a malformed line of the request log")
            return
        if event.get("event") != "prefill":
            return
        found = _FRONT_ID.search(str(event.get("request_id", "")))
        if found is None:
            return  # a request that did not come through the front
        front_id = found.group(0)
        self._counts[front_id] = self._counts.get(front_id, 0) + int(event["num_pooled"])
        self._counts.move_to_end(front_id)
        while len(self._counts) > MAX_UNCLAIMED:
            self._counts.popitem(last=False)
