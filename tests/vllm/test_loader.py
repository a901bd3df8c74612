"""The loader thread hands each outcome over as soon as it is known (a warm request's first
token must not wait for the cold prompt batched after it), in order, and stops when closed."""

from __future__ import annotations

import threading

from cacheprune.vllm.loader import Loader


def test_outcomes_come_one_by_one_and_close_returns_what_never_ran():
    go = threading.Event()

    def load(orders):
        for index, order in enumerate(orders):
            if index == 1:
                assert go.wait(60)
            yield f"done {order}"

    loader: Loader[str] = Loader(load, threads=1)
    loader.submit(["a", "b"])  # type: ignore[list-item]
    first: list[str] = []
    while not first:
        first = loader.take_done(wait_s=60)
    assert first == ["done a"]  # before the second order was let go
    assert loader.num_loading == 1
    go.set()
    second: list[str] = []
    while not second:
        second = loader.take_done(wait_s=60)
    assert second == ["done b"] and loader.num_loading == 0
    assert loader.close() == []
    assert loader.take_done() == []
