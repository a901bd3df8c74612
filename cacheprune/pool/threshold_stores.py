"""Where the shared backends keep the publication threshold's sender marks (threshold.py).

    Valkey:  cp:w:<8-byte window id>  a sorted set of marks scored by renewal time, with a TTL,
             all of a prompt's windows in one script call (valkey_scripts.ADD_SENDERS)
    file://: senders.sqlite in the pool folder, one row per (window id, mark) with its renewal
             time; SQLite's own locking serializes the processes of the machine
"""

from __future__ import annotations

import itertools
import sqlite3
import threading
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager
from typing import Any

import numpy as np
import numpy.typing as npt

from cacheprune.pool.shared_medium import MediumError
from cacheprune.pool.threshold import CAP_PER_THRESHOLD, SelectMarks, SenderCountStore

_SQL_CHUNK = 500  # ids per SELECT ... IN (...): far below SQLite's limit on parameters
_TRIM_EVERY = 64  # calls between two trims of the table to its most recent rows
_FORGET_BATCH = 1000  # windows (Valkey) or rows (SQLite) read per batch by `forget`


class ValkeySenderCounts(SenderCountStore):
    def __init__(self, server: Callable[[], AbstractContextManager[Any]],
                 add_senders: Callable[..., object], prefix: bytes) -> None:
        self._server = server
        self._add_senders = add_senders
        self._prefix = prefix

    def add_and_read(self, window_ids: npt.NDArray[np.uint64], marks: Sequence[bytes],
                     now: float, ttl_s: float, cap: int, max_windows: int, read: int
                     ) -> list[list[bytes]]:
        # NOTE: the server's maxmemory policy bounds the windows (each key has a TTL).
        with self._server():
            found = self._add_senders(args=[
                np.ascontiguousarray(window_ids, dtype="<u8").tobytes(), b"".join(marks),
                self._prefix, repr(now), repr(ttl_s), cap, read])
        if not isinstance(found, list) or len(found) != window_ids.shape[0]:
            raise MediumError("the server answered the sender count with another shape")
        return [list(window) if isinstance(window, list) else [] for window in found]

    def forget(self, select: SelectMarks) -> int:
        forgotten = 0
        with self._server() as client:
            scan = client.scan_iter(match=self._prefix + b"*", count=_FORGET_BATCH)
            for keys in _batches(scan, _FORGET_BATCH):
                reading = client.pipeline(transaction=False)
                for key in keys:
                    reading.zrange(key, 0, -1)
                held = [(key, mark) for key, marks in zip(keys, reading.execute(), strict=True)
                        for mark in marks if isinstance(mark, bytes) and len(mark) == 16]
                if not held:
                    continue
                window_ids = np.frombuffer(b"".join(key[len(self._prefix):] for key, _ in held),
                                           dtype="<u8").astype(np.uint64)
                chosen = select(window_ids, [mark for _, mark in held])
                removing = client.pipeline(transaction=False)
                for key, mark in itertools.compress(held, chosen):
                    removing.zrem(key, mark)
                removing.execute()
                forgotten += int(chosen.sum())
        return forgotten


class FileSenderCounts(SenderCountStore):
    def __init__(self, path: str, timeout_s: float) -> None:
        self._path = path
        self._timeout_s = timeout_s
        self._lock = threading.Lock()
        self._connection: sqlite3.Connection | None = None
        self._calls = 0

    def _db(self) -> sqlite3.Connection:
        if self._connection is None:
            connection = sqlite3.connect(self._path, timeout=self._timeout_s,
                                         isolation_level=None, check_same_thread=False)
            connection.execute("PRAGMA journal_mode=WAL")
            connection.execute("CREATE TABLE IF NOT EXISTS senders (window INTEGER NOT NULL, "
                               "mark BLOB NOT NULL, renewed REAL NOT NULL, "
                               "PRIMARY KEY (window, mark)) WITHOUT ROWID")
            connection.execute("CREATE INDEX IF NOT EXISTS senders_renewed ON senders(renewed)")
            self._connection = connection
        return self._connection

    def add_and_read(self, window_ids: npt.NDArray[np.uint64], marks: Sequence[bytes],
                     now: float, ttl_s: float, cap: int, max_windows: int, read: int
                     ) -> list[list[bytes]]:
        signed = window_ids.astype(np.uint64).view(np.int64).tolist()
        rows = list(zip(signed, marks, strict=True))
        try:
            with self._lock, _transaction(self._db()) as db:
                db.execute("DELETE FROM senders WHERE renewed < ?", (now - ttl_s,))
                db.executemany("UPDATE senders SET renewed = ? WHERE window = ? AND mark = ?",
                               [(now, window, mark) for window, mark in rows])
                db.executemany(
                    "INSERT OR IGNORE INTO senders (window, mark, renewed) SELECT ?1, ?2, ?3 "
                    "WHERE (SELECT COUNT(*) FROM senders WHERE window = ?1) < ?4",
                    [(window, mark, now, cap) for window, mark in rows])
                self._calls += 1
                if self._calls % _TRIM_EVERY == 0:  # rows of windows nobody sends any more
                    db.execute("DELETE FROM senders WHERE renewed <= (SELECT renewed FROM "
                               "senders ORDER BY renewed DESC LIMIT 1 OFFSET ?)",
                               (CAP_PER_THRESHOLD * max_windows,))
                found: dict[int, list[bytes]] = {}
                unique = list(dict.fromkeys(signed))
                for i in range(0, len(unique), _SQL_CHUNK):
                    chunk = unique[i:i + _SQL_CHUNK]
                    marks_of = db.execute(
                        "SELECT window, mark FROM (SELECT window, mark, ROW_NUMBER() OVER "
                        "(PARTITION BY window ORDER BY renewed, mark) AS place FROM senders "
                        f"WHERE window IN ({','.join('?' * len(chunk))})) WHERE place <= ?",
                        [*chunk, read])
                    for window, mark in marks_of:
                        found.setdefault(window, []).append(mark)
        except sqlite3.Error as error:
            raise MediumError(f"sender counts: {type(error).__name__}") from error
        return [found.get(window, []) for window in signed]

    def forget(self, select: SelectMarks) -> int:
        doomed: list[tuple[int, bytes]] = []
        try:
            with self._lock, _transaction(self._db()) as db:
                rows = db.execute("SELECT window, mark FROM senders")
                while batch := rows.fetchmany(_FORGET_BATCH):
                    window_ids = np.array([w for w, _ in batch], dtype=np.int64).view(np.uint64)
                    chosen = select(window_ids, [mark for _, mark in batch])
                    doomed.extend(itertools.compress(batch, chosen))
                db.executemany("DELETE FROM senders WHERE window = ? AND mark = ?", doomed)
        except sqlite3.Error as error:
            raise MediumError(f"sender counts: {type(error).__name__}") from error
        return len(doomed)

    def close(self) -> None:
        if self._connection is not None:
            self._connection.close()
            self._connection = None


def _batches(items: Iterable[bytes], size: int) -> Iterator[list[bytes]]:
    batch: list[bytes] = []
    for item in items:
        batch.append(item)
        if len(batch) == size:
            yield batch
            batch = []
    if batch:
        yield batch


@contextmanager
def _transaction(db: sqlite3.Connection) -> Iterator[sqlite3.Connection]:
    """BEGIN IMMEDIATE ... COMMIT, or ROLLBACK when the block raises."""
    db.execute("BEGIN IMMEDIATE")
    try:
        yield db
    except BaseException:
        db.execute("ROLLBACK")
        raise
    db.execute("COMMIT")
