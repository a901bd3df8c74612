"""The connector's loader thread: prefills that vLLM waits for asynchronously (`async_load`)
run here, beside the engine's steps, so that the running requests go on decoding meanwhile.

vLLM keeps such a request in WAITING_FOR_REMOTE_KVS, with its blocks allocated, until the
worker reports it done (`get_finished`); it is scheduled the step after, with every prompt
token but the last computed. A request that ends meanwhile (an abort) keeps its blocks until
then too, so the loader never writes into blocks vLLM gave to another request.

The thread only computes: it plans, prefills and writes each batch of orders it is given
(`load`, the worker's function) and queues what came of each as soon as it is known. The
engine's thread takes the outcomes (`take_done`) and alone updates the worker's state and
talks to vLLM. Batches run in the order submitted; the orders that arrive while one runs go
together in the next.
"""

from __future__ import annotations

import collections
import threading
from collections.abc import Callable, Iterable, Sequence
from typing import Generic, TypeVar

from cacheprune.vllm.background import start_background_thread
from cacheprune.vllm.orders import PrefillOrder

Outcome = TypeVar("Outcome")


class Loader(Generic[Outcome]):
    """`load(orders)` gives one outcome per order, each as soon as it is known, and raises
    nothing (it names each order's failure in its outcome); `threads`: the thread's torch
    intra-op threads (None: as many as the engine's thread has when the first order comes)."""

    def __init__(self, load: Callable[[Sequence[PrefillOrder]], Iterable[Outcome]],
                 threads: int | None = None) -> None:
        self._load = load
        self._threads = threads
        self._waiting: collections.deque[PrefillOrder] = collections.deque()
        self._done: list[Outcome] = []
        self._num_loading = 0  # orders submitted whose outcome is not yet taken
        self._closing = False
        self._cond = threading.Condition()
        self._thread: threading.Thread | None = None

    def submit(self, orders: Sequence[PrefillOrder]) -> None:
        if not orders:
            return
        with self._cond:
            if self._closing:
                raise RuntimeError("the loader is closed")
            self._waiting.extend(orders)
            self._num_loading += len(orders)
            self._cond.notify_all()
        self._start()

    def take_done(self, wait_s: float = 0.0) -> list[Outcome]:
        """Outcomes since the last call; waits up to `wait_s` for one if none is ready."""
        with self._cond:
            if not self._done and wait_s > 0 and self._num_loading:
                self._cond.wait(wait_s)
            done, self._done = self._done, []
            self._num_loading -= len(done)
        return done

    @property
    def num_loading(self) -> int:
        with self._cond:
            return self._num_loading

    def close(self, timeout_s: float = 10.0) -> list[PrefillOrder]:
        """Stop after the batch running now (waiting at most `timeout_s` for it: vLLM is
        shutting down); returns the orders that never ran."""
        with self._cond:
            self._closing = True
            left = list(self._waiting)
            self._waiting.clear()
            self._cond.notify_all()
        if self._thread is not None:
            self._thread.join(timeout_s)
        return left

    # ---- the thread ----------------------------------------------------------------------

    def _start(self) -> None:
        if self._thread is None:
            self._thread = start_background_thread("cacheprune-loader", self._threads,
                                                   self._loop)

    def _loop(self) -> None:
        while True:
            with self._cond:
                while not self._waiting and not self._closing:
                    self._cond.wait()
                if self._closing:
                    return
                batch = list(self._waiting)
                self._waiting.clear()
            for outcome in self._load(batch):
                with self._cond:
                    self._done.append(outcome)
                    self._cond.notify_all()
