"""Detection off vLLM's scheduling loop: the connector's scheduler half hands each prompt's
masking (decode, detect, re-encode) to one background thread and answers vLLM "not yet" until
it is done, so that the loop goes on stepping the running requests meanwhile (the worker's
forward passes overlap the detection) and simultaneous arrivals do not wait in the loop for
each other's detection.

One thread: the detectors are never run twice at once (their thread safety is not promised).
Fail closed: a detection that raises gives no admission (vLLM computes the prompt alone).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Generic, TypeVar

logger = logging.getLogger(__name__)
Result = TypeVar("Result")


class _Pending:
    """The answer of `DetectionThread.poll` while the detection runs."""


PENDING = _Pending()


class DetectionThread(Generic[Result]):
    def __init__(self) -> None:
        self._executor = ThreadPoolExecutor(max_workers=1,
                                            thread_name_prefix="cacheprune-detection")
        self._running: dict[str, Future[Result | None]] = {}

    def poll(self, request_id: str, detect: Callable[[], Result | None]
             ) -> Result | None | _Pending:
        """The request's result once `detect` has run in the thread (started by the first
        call), PENDING until then."""
        future = self._running.get(request_id)
        if future is None:
            future = self._executor.submit(_fail_closed, request_id, detect)
            self._running[request_id] = future
        if not future.done():
            return PENDING
        del self._running[request_id]
        return future.result()

    def forget(self, request_id: str) -> None:
        """The request ended: its detection is not needed (skipped if not started)."""
        future = self._running.pop(request_id, None)
        if future is not None:
            future.cancel()

    @property
    def num_running(self) -> int:
        return len(self._running)

    def close(self) -> None:
        for future in self._running.values():
            future.cancel()
        self._running.clear()
        self._executor.shutdown(wait=False, cancel_futures=True)


def _fail_closed(request_id: str, detect: Callable[[], Result | None]) -> Result | None:
    try:
        return detect()
    except Exception:  # noqa: BLE001 - fail closed: the prompt stays out of the pool
        logger.exception("cacheprune: detection of request %s failed; vLLM computes it alone",
                         request_id)
        return None
