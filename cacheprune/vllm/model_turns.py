"""vLLM's layers taken in turns by the engine's steps and the connector's background threads
(the publisher, and the loader when it has no copy of the weights).

vLLM-CPU's linear layers (oneDNN) share one process-wide scratchpad buffer, which a call may
also reallocate: two threads in such a layer at once corrupt each other's results. So every
call into vLLM's layers holds one lock:
- the engine's thread holds it for a whole step that runs a forward pass (`hold_for_step`
  in `start_load_kv`, `release_after_step` in `wait_for_save`; the blended prefills and
  vLLM's forward pass are inside), and for vLLM's `compute_logits`, which runs after the
  step's `wait_for_save` (`guard_logits`);
- a background thread takes it for each chunk of at most `BACKGROUND_ROWS` rows, so that a
  step waits at most one such chunk for it (a few milliseconds), never a whole pass.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

import torch

# Rows per locked call in a background thread: small enough that a step waiting for the lock
# waits a few milliseconds (one 256-row MLP projection of SmolLM2 on one core).
BACKGROUND_ROWS = 256

_LOCK = threading.Lock()
_state = threading.local()  # .background: this thread is a background thread
_step_held = False  # set and cleared by the engine's thread only


def mark_background_thread() -> None:
    """The calling thread is a background thread: its calls into vLLM's layers take turns."""
    _state.background = True


def _is_background() -> bool:
    return bool(getattr(_state, "background", False))


def hold_for_step() -> None:
    """The engine's thread starts a step with a forward pass (no-op if held already)."""
    global _step_held
    if not _step_held:
        _LOCK.acquire()
        _step_held = True


def release_after_step() -> None:
    global _step_held
    if _step_held:
        _step_held = False
        _LOCK.release()


def call_layer(call: Callable[[torch.Tensor], torch.Tensor], x: torch.Tensor) -> torch.Tensor:
    """`call(x)` for a row-wise layer of vLLM's (linear, logits), taking turns."""
    if not _is_background():
        if _step_held:
            return call(x)
        with _LOCK:
            return call(x)
    rows = x.reshape(-1, x.shape[-1])
    parts = []
    for chunk in rows.split(BACKGROUND_ROWS):
        with _LOCK:
            parts.append(call(chunk))
    out = parts[0] if len(parts) == 1 else torch.cat(parts)
    return out.reshape(*x.shape[:-1], out.shape[-1])


def guard_logits(vllm_model: Any) -> None:
    """vLLM's own `compute_logits` (called by its model runner after the step's
    `wait_for_save`) takes its turn too; the original stays reachable for cacheprune."""
    if getattr(vllm_model, "_cacheprune_unguarded_logits", None) is not None:
        return
    original = vllm_model.compute_logits

    def compute_logits(hidden: torch.Tensor, *args: Any, **kwargs: Any) -> Any:
        if _step_held and not _is_background():
            return original(hidden, *args, **kwargs)
        with _LOCK:
            return original(hidden, *args, **kwargs)

    vllm_model._cacheprune_unguarded_logits = original
    vllm_model.compute_logits = compute_logits


def unguarded_logits(vllm_model: Any) -> Callable[..., Any]:
    return getattr(vllm_model, "_cacheprune_unguarded_logits", None) or vllm_model.compute_logits
