"""The connector's publisher thread: each request's publication (annotation, the private-free
pass, staging) and its commit run here, off the engine's steps.

Why a thread of the worker process: it computes over the same vLLM weights with no copy.
Its calls into vLLM's layers take turns with the engine's steps (`model_turns`); everything
else (cacheprune's attention, the annotator, the pool's writes) runs beside the steps on the
cores the engine leaves idle. Its torch thread budget is its own (`PUBLISHER_THREADS`): torch's
intra-op thread count is per thread under OpenMP, and the engine's is put back after the
thread sets its own.

Committed as soon as staged, in the thread, unless the request ended badly before (`cancel`:
a job not started is skipped, one running is discarded once staged). What a publication
stages never depends on how its request ends (the private-free pass or cacheprune's prefill
computed it), and the next job, often a later tenant's request for the same document, then
finds it in the pool and skips what the pool holds. Under load the k-th tenant's request
decodes for seconds during which the next tenants would otherwise find nothing.

Bounded: at most `max_waiting` publications wait or run (each holds a prompt's KV); `submit`
refuses more, and the caller counts the drop. Results are taken by the engine's thread
(`take_done`), which alone talks to vLLM.
"""

from __future__ import annotations

import collections
import logging
import threading
from dataclasses import dataclass

from cacheprune.serving import ServedRequest
from cacheprune.vllm.background import start_background_thread
from cacheprune.vllm.blend import Blender

logger = logging.getLogger(__name__)
PUBLISHER_THREADS = 1  # the publisher's intra-op threads: it uses idle cores, not the engine's


@dataclass(slots=True, frozen=True)
class Settled:
    """A request's publication is over: published (the tokens), discarded, skipped, failed or
    empty (0)."""

    request_id: str
    num_published_tokens: int


@dataclass(slots=True, frozen=True)
class _Publish:
    request: ServedRequest  # PREFILLED; the thread only reads it


class Publisher:
    def __init__(self, blender: Blender, max_waiting: int) -> None:
        self._blender = blender
        self._max_waiting = max_waiting
        self._jobs: collections.deque[_Publish | None] = collections.deque()
        self._done: list[Settled] = []
        self._cancelled: set[str] = set()
        self._num_publishing = 0  # publish jobs submitted, result not yet taken
        self._cond = threading.Condition()
        self._thread: threading.Thread | None = None

    def submit(self, request: ServedRequest) -> bool:
        """Queue the PREFILLED request's publication (`Blender.publish`); False (nothing
        queued) when `max_waiting` wait already."""
        with self._cond:
            if self._num_publishing >= self._max_waiting:
                return False
            self._num_publishing += 1
            self._jobs.append(_Publish(request))
            self._cond.notify_all()
        self._start()
        return True

    def cancel(self, request_id: str) -> None:
        """The request ended badly before its publication was committed: skip it, or discard
        what it stages (it comes back as `Settled(request_id, 0)`)."""
        with self._cond:
            self._cancelled.add(request_id)

    def take_done(self, wait_s: float = 0.0) -> list[Settled]:
        """Results since the last call; waits up to `wait_s` for one if there is none."""
        with self._cond:
            if not self._done and wait_s > 0 and self._jobs_pending():
                self._cond.wait(wait_s)
            done, self._done = self._done, []
            self._num_publishing -= len(done)
            self._cancelled.difference_update(result.request_id for result in done)
        return done

    def _jobs_pending(self) -> bool:
        return bool(self._jobs) or self._num_publishing > 0

    def close(self, timeout_s: float = 10.0) -> list[_Publish]:
        """Stop after the job running now (waiting at most `timeout_s` for it: vLLM is
        shutting down); returns the jobs that never ran."""
        with self._cond:
            left = [job for job in self._jobs if job is not None]
            self._jobs.clear()
            self._jobs.append(None)
            self._cond.notify_all()
        if self._thread is not None:
            self._thread.join(timeout_s)
        return left

    # ---- the thread ----------------------------------------------------------------------

    def _start(self) -> None:
        if self._thread is None:
            self._thread = start_background_thread("cacheprune-publisher", PUBLISHER_THREADS,
                                                   self._loop)

    def _loop(self) -> None:
        while True:
            with self._cond:
                while not self._jobs:
                    self._cond.wait()
                job = self._jobs.popleft()
            if job is None:
                return
            result = self._run(job)
            with self._cond:
                self._done.append(result)
                self._cond.notify_all()

    def _run(self, job: _Publish) -> Settled:
        request_id = job.request.request_id
        if self._cancelled_now(request_id):
            return Settled(request_id, 0)
        try:
            publication = self._blender.publish(job.request)
            if publication is None:
                return Settled(request_id, 0)
            return Settled(request_id,
                           publication.settle(ended_well=not self._cancelled_now(request_id)))
        except Exception:  # noqa: BLE001 - a lost publication is only a future miss
            logger.exception("cacheprune: publication of request %s failed", request_id)
            return Settled(request_id, 0)

    def _cancelled_now(self, request_id: str) -> bool:
        with self._cond:
            return request_id in self._cancelled
