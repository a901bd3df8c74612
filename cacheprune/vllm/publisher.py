"""The connector's publisher thread: each request's publication (annotation, the private-free
pass, staging) and its settling (commit or abort) run here, off the engine's steps.

Why a thread of the worker process: it computes over the same vLLM weights with no copy.
Its calls into vLLM's layers take turns with the engine's steps (`model_turns`); everything
else (cacheprune's attention, the annotator, the pool's writes) runs beside the steps on the
cores the engine leaves idle. Its torch thread budget is its own (`PUBLISHER_THREADS`): torch's
intra-op thread count is per thread under OpenMP, and the engine's is put back after the
thread sets its own.

Bounded: at most `max_waiting` publications wait or run (each holds a prompt's KV); `submit`
refuses more, and the caller counts the drop. Jobs run in the order submitted, so a request's
settling never overtakes its publication. Results are taken by the engine's thread
(`take_done`), which alone talks to vLLM.
"""

from __future__ import annotations

import collections
import logging
import threading
from dataclasses import dataclass

from cacheprune.serving import ServedRequest
from cacheprune.tokens import MaskArray
from cacheprune.vllm.background import start_background_thread
from cacheprune.vllm.blend import Blender, PendingPublication

logger = logging.getLogger(__name__)
PUBLISHER_THREADS = 1  # the publisher's intra-op threads: it uses idle cores, not the engine's


@dataclass(slots=True, frozen=True)
class Staged:
    """A publication ran: its staged segments (None: nothing to publish, or it failed)."""

    request_id: str
    publication: PendingPublication | None


@dataclass(slots=True, frozen=True)
class Settled:
    request_id: str
    num_published_tokens: int


@dataclass(slots=True, frozen=True)
class _Publish:
    request: ServedRequest  # PREFILLED; the thread only reads it
    new_text: MaskArray | None  # a request vLLM computed: its new text (`Blender.publish`)


@dataclass(slots=True, frozen=True)
class _Settle:
    request_id: str
    publication: PendingPublication
    ended_well: bool


class Publisher:
    def __init__(self, blender: Blender, max_waiting: int) -> None:
        self._blender = blender
        self._max_waiting = max_waiting
        self._jobs: collections.deque[_Publish | _Settle | None] = collections.deque()
        self._done: list[Staged | Settled] = []
        self._cancelled: set[str] = set()
        self._num_publishing = 0  # publish jobs submitted, result not yet taken
        self._cond = threading.Condition()
        self._thread: threading.Thread | None = None

    def submit(self, request: ServedRequest, new_text: MaskArray | None = None) -> bool:
        """Queue the PREFILLED request's publication (`Blender.publish`); False (nothing
        queued) when `max_waiting` wait already."""
        with self._cond:
            if self._num_publishing >= self._max_waiting:
                return False
            self._num_publishing += 1
            self._jobs.append(_Publish(request, new_text))
            self._cond.notify_all()
        self._start()
        return True

    def settle(self, request_id: str, publication: PendingPublication, ended_well: bool) -> None:
        with self._cond:
            self._jobs.append(_Settle(request_id, publication, ended_well))
            self._cond.notify_all()
        self._start()

    def cancel(self, request_id: str) -> None:
        """The request ended badly before its publication ran: skip it (it comes back as
        `Staged(request_id, None)`)."""
        with self._cond:
            self._cancelled.add(request_id)

    def take_done(self, wait_s: float = 0.0) -> list[Staged | Settled]:
        """Results since the last call; waits up to `wait_s` for one if there is none."""
        with self._cond:
            if not self._done and wait_s > 0 and self._jobs_pending():
                self._cond.wait(wait_s)
            done, self._done = self._done, []
            staged = [result.request_id for result in done if isinstance(result, Staged)]
            self._num_publishing -= len(staged)
            self._cancelled.difference_update(staged)
        return done

    def _jobs_pending(self) -> bool:
        return bool(self._jobs) or self._num_publishing > 0

    def close(self, timeout_s: float = 10.0) -> list[_Publish | _Settle]:
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

    def _run(self, job: _Publish | _Settle) -> Staged | Settled:
        if isinstance(job, _Settle):
            published = 0
            try:
                published = job.publication.settle(job.ended_well)
            except Exception:  # noqa: BLE001 - a lost publication is only a future miss
                logger.exception("cacheprune: settling the publication of %s failed",
                                 job.request_id)
            return Settled(job.request_id, published)
        request_id = job.request.request_id
        with self._cond:
            cancelled = request_id in self._cancelled
            self._cancelled.discard(request_id)
        if cancelled:
            return Staged(request_id, None)
        try:
            return Staged(request_id, self._blender.publish(job.request, job.new_text))
        except Exception:  # noqa: BLE001 - a lost publication is only a future miss
            logger.exception("cacheprune: publication of request %s failed", request_id)
            return Staged(request_id, None)
