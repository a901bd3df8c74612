"""Small pools and synthetic KV for the pool tests (tiny shapes keep them fast)."""

from __future__ import annotations

import numpy as np
import torch

from cacheprune.pool import KVPool, KVShape, PoolConfig

SHAPE = KVShape(num_layers=2, num_kv_heads=1, head_dim=4)
BYTES_PER_TOKEN = SHAPE.entry_bytes_per_token
MODEL = "model-a"
POLICY = "policy-1"
WINDOW = 4


class ManualClock:
    """A time source the test advances by hand (TTL and deadlines without sleeping)."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def make_pool(budget_tokens: int, max_context_tokens: int = 16, **overrides) -> KVPool:
    clock = overrides.pop("clock", None)
    config = PoolConfig(
        kv_shape=SHAPE,
        budget_bytes=budget_tokens * BYTES_PER_TOKEN,
        max_context_tokens=max_context_tokens,
        min_entry_tokens=overrides.pop("min_entry_tokens", WINDOW),
        **overrides,
    )
    return KVPool(config) if clock is None else KVPool(config, clock=clock)


def kv_for(token_ids, start_position: int = 0):
    """Deterministic KV whose values encode (layer, token id, position, dim)."""
    num_tokens = len(token_ids)
    layer = torch.arange(SHAPE.num_layers, dtype=torch.float32).view(-1, 1, 1, 1)
    token = torch.as_tensor(np.asarray(token_ids, dtype=np.float32)).view(1, 1, -1, 1)
    dim = torch.arange(SHAPE.head_dim, dtype=torch.float32).view(1, 1, 1, -1)
    keys = (layer * 1000 + token + dim * 0.01).expand(
        SHAPE.num_layers, SHAPE.num_kv_heads, num_tokens, SHAPE.head_dim
    ).contiguous()
    values = -keys
    positions = np.arange(start_position, start_position + num_tokens, dtype=np.int64)
    return keys, values, positions


def publish(pool: KVPool, token_ids, request_id: str = "producer", model_id: str = MODEL,
            policy_version: str = POLICY):
    """Publish one segment through a committed session; returns the session."""
    keys, values, positions = kv_for(token_ids)
    with pool.session(request_id, model_id, policy_version) as session:
        session.stage(
            token_ids, keys, values, positions, np.zeros(len(token_ids), dtype=bool),
            np.zeros(len(token_ids), dtype=bool),
        )
        session.commit()
    return session


def segment(first_token: int, num_tokens: int) -> list[int]:
    return list(range(first_token, first_token + num_tokens))
