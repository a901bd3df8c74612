"""Errors the pool raises; each message names what is wrong and the numbers involved."""

from __future__ import annotations


class PoolError(Exception):
    """Base class of every error raised by the pool."""


class PoolConfigError(PoolError, ValueError):
    """A configuration value is out of range."""


class PoolCapacityError(PoolError):
    """The budget cannot hold one maximum-length context: the pool refuses to start."""


class InvalidEntryError(PoolError, ValueError):
    """Staged KV with the wrong dtype, shape or length; nothing was staged."""


class PrivateTokenError(PoolError, ValueError):
    """A staged segment contains a token masked as private; the pool never stores it."""


class PromptTooLongError(PoolError, ValueError):
    """A request longer than the pool's maximum context: rejected before any lookup."""


class SessionStateError(PoolError, RuntimeError):
    """A session used outside its `with` block, after it ended, or for a match it did not lease."""


class SessionTimeoutError(PoolError, TimeoutError):
    """The session's deadline passed; its staged entries are discarded."""


class BelowThresholdError(PoolError, ValueError):
    """A staged segment holds tokens that fewer than `publish_threshold` tenants sent; the pool
    never stores them."""
