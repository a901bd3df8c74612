"""What several serving tests share: a public document and a reader of a pool's entries."""

from __future__ import annotations

import numpy as np
import torch

from cacheprune.pool import Scope
from cacheprune.serving import Engine

DOCUMENT = (
    "The river ferry leaves the north pier every forty minutes from six in the morning. "
    "Bicycles ride free on weekdays, and dogs on a lead are welcome on the open deck. "
    "Tickets bought on board cost a little more than tickets bought at the pier office, "
    "which also sells monthly passes for commuters and a family ticket for weekend trips. "
) * 3

# (start in the looked-up tokens, K, V, positions, recompute marks) of one pool match
Entry = tuple[int, torch.Tensor, torch.Tensor, np.ndarray, np.ndarray]


def pool_entries(engine: Engine, token_ids: np.ndarray) -> list[Entry]:
    """Every pool match of `token_ids` (all public), read as an outside auditor would."""
    scope = Scope(engine.identity, "auditor", engine.config.sharing_domain("auditor"))
    with engine.pool.session("audit", scope) as session:
        found = []
        for match in session.lookup(token_ids, np.zeros(len(token_ids), dtype=np.bool_)):
            kv = session.read(match)
            assert kv is not None
            found.append((match.request_start, kv.keys.clone(), kv.values.clone(),
                          np.array(kv.positions), np.array(kv.recompute)))
    return found


def assert_bitwise_equal(entries: list[Entry], others: list[Entry]) -> None:
    """Same places, and K, V, positions and marks equal bit for bit."""
    assert [entry[0] for entry in entries] == [entry[0] for entry in others]
    for (_, keys, values, positions, marks), (_, keys2, values2, positions2, marks2) in zip(
            entries, others, strict=True):
        assert torch.equal(keys, keys2) and torch.equal(values, values2)
        np.testing.assert_array_equal(positions, positions2)
        np.testing.assert_array_equal(marks, marks2)


def count_private_free_passes(monkeypatch) -> list[int]:
    """A list that gets one item per private-free pass run from now on (the pass itself runs)."""
    from cacheprune.serving import private_free

    passes: list[int] = []
    real = private_free.PrivateFreePass.compute.__func__

    def counted(cls, *args, **kwargs):
        passes.append(1)
        return real(cls, *args, **kwargs)

    monkeypatch.setattr(private_free.PrivateFreePass, "compute", classmethod(counted))
    return passes
