"""With anchors inside entries, a request that shares only the middle of an entry reads
exactly that part of the entry's KV."""

from __future__ import annotations

import numpy as np
import torch
from pool_helpers import kv_for, make_pool, publish, scope


def test_middle_of_an_entry_is_found_and_read_exactly():
    entry = list(range(100, 112))  # 12 tokens
    request = [7, 7, 7] + entry[4:11] + [9]  # shares entry[4:11] only
    # Stride 3: the window at entry offset 6 finds it, and the match reaches back to offset 4.
    for stride, expected in [(None, []), (2, [(3, 7, 4)]), (3, [(3, 7, 4)])]:
        pool = make_pool(64, anchor_stride=stride)
        publish(pool, entry)
        with pool.session("reader", scope()) as session:
            matches = session.lookup(request, np.zeros(len(request), dtype=bool))
            assert [(m.request_start, m.length, m.entry_start) for m in matches] == expected
            for match in matches:
                part = session.read(match)
                full_keys, full_values, full_positions = kv_for(entry)
                span = slice(match.entry_start, match.entry_start + match.length)
                assert torch.equal(part.keys, full_keys[:, :, span])
                assert torch.equal(part.values, full_values[:, :, span])
                assert part.positions.tolist() == full_positions[span].tolist()
                assert request[match.request_start:match.request_end] == entry[span]
