"""Detection off vLLM's scheduling loop: the connector's scheduler half hands each prompt's
masking (decode, detect, re-encode) and pool lookup to one background thread, started when the
request arrives, so that simultaneous arrivals do not wait in the loop for each other's
detection and the worker's forward passes overlap it.

A prompt whose detection is not done when vLLM considers it must wait for the next step, and
the step it misses is the one vLLM is forming: the one that prefills. On a CPU such a step
takes seconds, many times a prompt's detection (about 0.1 s per 1,000 tokens). So the loop
waits for the detections of the prompts it considers, in each scheduling pass at most as long
as the longest of the recent steps (`WaitBudget`): that spares the new prompt such a step, and
costs the running requests no more than one. After a step that ran nothing (nobody waits on the
loop) it waits up to `IDLE_WAIT_S` at least. On a GPU, whose steps take milliseconds, it barely
waits, and a prompt joins the step after its detection.

Measured (`benchmarks/vllm_load.py`, a stream of new documents at concurrency 4, 2 cores): a
loop that never waited had a 1.43x higher median TTFT than salted vLLM; one that waited as long
as the last step took (a decode step, ~0.17 s, short of a detection under load) 1.26x, as the
skipped prompt missed the next prefill step; detection in the loop 1.00-1.06x.

One thread: the detectors are never run twice at once (their thread safety is not promised).
Fail closed: a detection that raises gives no admission (vLLM computes the prompt alone).
"""

from __future__ import annotations

import logging
import queue
import time
from collections import deque
from collections.abc import Callable
from concurrent.futures import CancelledError, Future
from concurrent.futures import TimeoutError as FutureTimeout
from typing import Generic, TypeVar

from cacheprune.vllm.background import start_background_thread

logger = logging.getLogger(__name__)
Result = TypeVar("Result")
Answer = TypeVar("Answer")

# How long one scheduling pass waits for detections, at least, when the last step ran no
# forward pass; and the number of recent steps whose longest bounds the wait.
IDLE_WAIT_S = 1.0
RECENT_STEPS = 32
# The detection thread's torch intra-op threads (the token tagger's). Beside the engine's
# OpenMP team, a second team of two on 2 cores made libgomp stop spinning between parallel
# regions: the tagger of a 4k-token prompt took 0.53 s with two threads, 0.31 s with one.
DETECTION_TORCH_THREADS = 1


class _Pending:
    """The answer of `DetectionThread.poll` while the detection runs."""


PENDING = _Pending()


_Job = tuple[Future, str, Callable[[], object]]


class DetectionThread(Generic[Result]):
    def __init__(self) -> None:
        self._jobs: queue.SimpleQueue[_Job | None] = queue.SimpleQueue()
        self._running: dict[str, Future[Result | None]] = {}
        start_background_thread("cacheprune-detection", DETECTION_TORCH_THREADS, self._serve)

    def start(self, request_id: str, detect: Callable[[], Result | None]) -> None:
        """Run `detect` for the request in the thread (once: a running one is kept)."""
        if request_id not in self._running:
            future: Future[Result | None] = Future()
            self._running[request_id] = future
            self._jobs.put((future, request_id, detect))

    def poll(self, request_id: str, detect: Callable[[], Result | None], wait_s: float = 0.0
             ) -> Result | None | _Pending:
        """The request's result once its detection has run in the thread (started now with
        `detect` unless it was started before), waiting up to `wait_s` for it; PENDING until
        then."""
        self.start(request_id, detect)
        future = self._running[request_id]
        try:
            result = future.result(timeout=wait_s)
        except FutureTimeout:
            return PENDING
        except CancelledError:  # closed meanwhile
            result = None
        del self._running[request_id]
        return result

    def peek(self, request_id: str) -> Result | None | _Pending:
        """The request's result if its detection has run (kept for `poll`); PENDING while it
        runs, and when it was never started or was already polled."""
        future = self._running.get(request_id)
        if future is None or not future.done() or future.cancelled():
            return PENDING
        return future.result()

    def forget(self, request_id: str) -> None:
        """The request ended: its detection is not needed (skipped if not started)."""
        future = self._running.pop(request_id, None)
        if future is not None:
            future.cancel()

    @property
    def num_running(self) -> int:
        return len(self._running)

    @property
    def running_ids(self) -> set[str]:
        """The requests whose detection runs or waits to be polled."""
        return set(self._running)

    def close(self) -> None:
        for future in self._running.values():
            future.cancel()
        self._running.clear()
        self._jobs.put(None)

    def _serve(self) -> None:
        while (job := self._jobs.get()) is not None:
            future, request_id, detect = job
            if future.set_running_or_notify_cancel():  # False: forgotten while queued
                future.set_result(_fail_closed(request_id, detect))


class WaitBudget:
    """How long vLLM's scheduling loop may still wait for detections in the pass it is in: the
    longest of the last `RECENT_STEPS` steps that ran a forward pass (each measured between the
    orders of two steps, less what the loop waited in between), `IDLE_WAIT_S` at least after a
    step that ran none, and `IDLE_WAIT_S` before any step."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._step_start: float | None = None  # when a step with a forward pass was ordered
        self._waited_s = 0.0  # waited since then
        self._recent_s: deque[float] = deque(maxlen=RECENT_STEPS)
        self._left_s = IDLE_WAIT_S

    def step_ordered(self, computes: bool) -> None:
        """A step's orders are built: the pass for the next step begins with a new budget."""
        now, step_start = self._clock(), self._step_start
        if step_start is not None:
            self._recent_s.append(max(now - step_start - self._waited_s, 0.0))
        longest = max(self._recent_s, default=IDLE_WAIT_S)
        self._left_s = max(longest, IDLE_WAIT_S) if step_start is None else longest
        self._step_start = now if computes else None
        self._waited_s = 0.0

    def spend(self, wait: Callable[[float], Answer]) -> Answer:
        """`wait(seconds left)`, its time taken from the budget."""
        start = self._clock()
        try:
            return wait(self._left_s)
        finally:
            spent = self._clock() - start
            self._left_s = max(self._left_s - spent, 0.0)
            self._waited_s += spent


def _fail_closed(request_id: str, detect: Callable[[], Result | None]) -> Result | None:
    try:
        return detect()
    except Exception:  # noqa: BLE001 - fail closed: the prompt stays out of the pool
        logger.exception("cacheprune: detection of request %s failed; vLLM computes it alone",
                         request_id)
        return None
