"""The detection thread and the scheduling loop's wait for it: a detection started on arrival
is the one the scheduler gets, the loop waits for it within the budget, and the budget is the
longest recent computing step (less what the loop waited), or IDLE_WAIT_S after an idle one."""

from __future__ import annotations

import threading
import time

import pytest

from cacheprune.vllm.detection_thread import (
    IDLE_WAIT_S,
    PENDING,
    RECENT_STEPS,
    DetectionThread,
    WaitBudget,
)


class Clock:
    """A time source the test moves (the budget's arithmetic, without sleeping)."""

    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_budget_is_the_longest_recent_step_less_the_wait():
    clock = Clock()
    budget = WaitBudget(clock)
    assert budget.spend(lambda left: left) == IDLE_WAIT_S  # no step yet: nobody waits
    budget.step_ordered(computes=True)
    clock.now += 0.5

    def wait_a_quarter(left: float) -> float:
        clock.now += 0.25
        return left

    assert budget.spend(wait_a_quarter) == pytest.approx(IDLE_WAIT_S)  # still the idle pass
    clock.now += 2.0
    budget.step_ordered(computes=True)  # that step took 2.75 s, 0.25 of it the loop's wait
    assert budget.spend(wait_a_quarter) == pytest.approx(2.5)
    assert budget.spend(lambda left: left) == pytest.approx(2.25)  # spent within the pass
    for _ in range(RECENT_STEPS - 1):  # short (decode) steps: the prefill step still bounds
        clock.now += 0.1
        budget.step_ordered(computes=True)
        assert budget.spend(lambda left: left) == pytest.approx(2.5)
    clock.now += 0.1
    budget.step_ordered(computes=True)  # the long step is no longer recent
    assert budget.spend(lambda left: left) == pytest.approx(0.1)
    budget.step_ordered(computes=False)  # an empty step: the next pass waits as when idle
    clock.now += 30.0
    budget.step_ordered(computes=True)
    assert budget.spend(lambda left: left) == IDLE_WAIT_S


def test_budget_never_goes_negative():
    clock = Clock()
    budget = WaitBudget(clock)
    budget.step_ordered(computes=True)

    def overrun(left: float) -> float:
        clock.now += 5.0
        return left

    budget.spend(overrun)
    budget.step_ordered(computes=True)  # all of the interval was the loop's own wait
    assert budget.spend(lambda left: left) == 0.0


def test_a_detection_started_on_arrival_is_the_one_polled():
    detection: DetectionThread[str] = DetectionThread()
    release = threading.Event()
    calls: list[str] = []

    def first() -> str:
        calls.append("first")
        release.wait(30)
        return "masked"

    def second() -> str:
        calls.append("second")
        return "other"

    try:
        detection.start("r1", first)
        assert detection.poll("r1", second, wait_s=0.0) is PENDING
        release.set()
        assert detection.poll("r1", second, wait_s=30.0) == "masked"
        assert calls == ["first"] and detection.num_running == 0
    finally:
        detection.close()


def test_poll_waits_up_to_its_budget():
    detection: DetectionThread[str] = DetectionThread()
    release = threading.Event()

    def slow() -> str:
        release.wait(30)  # done only when the test says so, however busy the machine
        return "masked"

    try:
        start = time.monotonic()
        assert detection.poll("r1", slow, wait_s=0.05) is PENDING
        assert time.monotonic() - start < 0.25  # gave up at its budget
        release.set()
        assert detection.poll("r1", slow, wait_s=30.0) == "masked"
        # A detection that raises is a refusal (vLLM computes the prompt alone), not an error.
        assert detection.poll("r2", lambda: 1 / 0, wait_s=30.0) is None  # type: ignore[misc]
    finally:
        detection.close()


def test_a_request_forgotten_while_queued_is_never_detected():
    detection: DetectionThread[str] = DetectionThread()
    release = threading.Event()
    ran: list[str] = []
    try:
        detection.start("busy", lambda: (release.wait(30), "busy")[1])
        detection.start("gone", lambda: (ran.append("gone"), "gone")[1])
        detection.forget("gone")
        release.set()
        assert detection.poll("busy", lambda: "x", wait_s=30.0) == "busy"
        time.sleep(0.1)
        assert ran == [] and detection.num_running == 0
    finally:
        detection.close()
