"""Append-only JSON-lines audit log: what happened to which entry for which request.

Events carry hashes, request ids, counts and reasons only: never token ids, text or KV.
"""

from __future__ import annotations

import json
import os
import time
from typing import IO, Literal

AuditEvent = Literal["publish", "reuse", "evict", "invalidate", "reject", "skip",
                     "leak_suspected"]  # the last: cacheprune.monitor


class AuditLog:
    """Writes one JSON object per line and flushes it; `path=None` writes nothing.

    Not thread-safe by itself: the pool calls it under its own lock.
    """

    __slots__ = ("path", "_file")

    def __init__(self, path: str | None) -> None:
        self.path = path
        self._file: IO[str] | None = None
        if path is not None:
            directory = os.path.dirname(os.path.abspath(path))
            if not os.path.isdir(directory):
                raise FileNotFoundError(f"audit log directory {directory!r} does not exist")
            self._file = open(path, "a", encoding="utf-8")  # noqa: SIM115 - closed by close()

    def record(
        self,
        event: AuditEvent,
        *,
        request_id: str | None = None,
        segment_hash: str | None = None,
        reason: str | None = None,
        num_tokens: int | None = None,
    ) -> None:
        if self._file is None:
            return
        fields: dict[str, object] = {"ts": round(time.time(), 6), "event": event}
        for key, value in (
            ("request_id", request_id),
            ("segment_hash", segment_hash),
            ("reason", reason),
            ("num_tokens", num_tokens),
        ):
            if value is not None:
                fields[key] = value
        self._file.write(json.dumps(fields, separators=(",", ":")) + "\n")
        self._file.flush()

    def close(self) -> None:
        if self._file is not None:
            self._file.close()
            self._file = None
