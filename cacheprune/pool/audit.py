"""Append-only JSON-lines audit log: what happened to which entry for which request.

Events carry keyed hashes, request ids, counts and reasons only: never token ids, text, KV or a
tenant's name (tenants appear as `PoolKeys.tenant_tag`). The file is created 0600 and never
through a symbolic link.

NOTE: an audit line that cannot be written (disk full, file gone) is counted in
`audit_failures` and logged once; it never interrupts the pool operation that wrote it, so a
request's leases are released and its gauges stay right whatever the disk does.
"""

from __future__ import annotations

import json
import logging
import os
import time
from typing import IO, Literal

from prometheus_client import Counter

from cacheprune.retriever import EntryName

# "leak_suspected": written by cacheprune.monitor, not by the pool.
AuditEvent = Literal["publish", "reuse", "evict", "invalidate", "reject", "skip", "miss",
                     "erase", "fault", "leak_suspected", "probe_suspected"]
logger = logging.getLogger(__name__)


class AuditLog:
    """Writes one JSON object per line and flushes it; `path=None` writes nothing.

    Not thread-safe by itself: the pool calls it under its own lock.
    """

    __slots__ = ("path", "_file", "_failures", "_warned")

    def __init__(self, path: str | None, failures: Counter) -> None:
        self.path = path
        self._file: IO[str] | None = None
        self._failures = failures
        self._warned = False
        if path is not None:
            directory = os.path.dirname(os.path.abspath(path))
            if not os.path.isdir(directory):
                raise FileNotFoundError(f"audit log directory {directory!r} does not exist")
            flags = os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_NOFOLLOW | os.O_CLOEXEC
            try:
                descriptor = os.open(path, flags, 0o600)
            except OSError as error:
                raise OSError(f"cannot open the audit log {path!r} (a symbolic link is refused): "
                              f"{error.strerror}") from error
            os.fchmod(descriptor, 0o600)
            self._file = os.fdopen(descriptor, "a", encoding="utf-8")

    def record(
        self,
        event: AuditEvent,
        *,
        request_id: str | None = None,
        entry: EntryName | None = None,
        ngram_hash: str | None = None,
        reason: str | None = None,
        num_tokens: int | None = None,
        tenant: str | None = None,
    ) -> None:
        """`entry` is the pool's keyed entry name, `ngram_hash` the leak monitor's hash of an
        n-gram, `tenant` a tenant tag: never a name."""
        if self._file is None:
            return
        fields: dict[str, object] = {"ts": round(time.time(), 6), "event": event}
        for key, value in (
            ("request_id", request_id),
            ("entry", entry),
            ("ngram_hash", ngram_hash),
            ("reason", reason),
            ("num_tokens", num_tokens),
            ("tenant", tenant),
        ):
            if value is not None:
                fields[key] = value
        try:
            self._file.write(json.dumps(fields, separators=(",", ":")) + "\n")
            self._file.flush()
        except OSError as error:
            self._failures.inc()
            if not self._warned:
                logger.warning("cacheprune: audit log %s cannot be written (%s); counting "
                               "failures in cacheprune_pool_audit_failures_total",
                               self.path, error.strerror)
                self._warned = True

    def replace_file(self, file: IO[str]) -> None:
        """Write to `file` from now on (fault-injection tests hand a failing one)."""
        self._file = file

    def close(self) -> None:
        if self._file is not None:
            try:
                self._file.close()
            except OSError:
                self._failures.inc()
            self._file = None
