"""A circuit breaker for a shared store: stop calling a server or disk that keeps failing.

    closed     every call goes to the store; a failure opens the breaker
    open       calls are refused at once (`allow()` is False) for `cooldown_s`
    half-open  after the cooldown one call (the probe) goes through: success closes the
               breaker, failure opens it for another cooldown

NOTE: one failure opens it. Each failure already cost a request a bounded wait (the store's
timeout); with a dead server, waiting that long again for every request and every step is the
cost we avoid. A false opening costs sharing for one cooldown, never a wrong answer.
"""

from __future__ import annotations

import threading
from collections.abc import Callable


class CircuitBreaker:
    """Thread-safe; `clock` is monotonic seconds."""

    __slots__ = ("cooldown_s", "clock", "_lock", "_open_until", "_probing", "num_openings")

    def __init__(self, cooldown_s: float, clock: Callable[[], float]) -> None:
        self.cooldown_s = cooldown_s
        self.clock = clock
        self._lock = threading.Lock()
        self._open_until: float | None = None  # None: closed
        self._probing = False
        self.num_openings = 0

    @property
    def is_open(self) -> bool:
        with self._lock:
            return self._open_until is not None

    @property
    def is_cooling_down(self) -> bool:
        """Open and its cooldown not over: a call now would be refused (side-effect free)."""
        with self._lock:
            return self._open_until is not None and self.clock() < self._open_until

    def allow(self) -> bool:
        """May a call go to the store now? Half-open lets exactly one caller through."""
        with self._lock:
            if self._open_until is None:
                return True
            if self._probing or self.clock() < self._open_until:
                return False
            self._probing = True
            return True

    def succeeded(self) -> None:
        with self._lock:
            self._open_until = None
            self._probing = False

    def failed(self) -> bool:
        """Record a failure; True when this failure opened a closed breaker."""
        with self._lock:
            was_closed = self._open_until is None
            self._open_until = self.clock() + self.cooldown_s
            self._probing = False
            if was_closed:
                self.num_openings += 1
            return was_closed
