"""The fixed-chunk baselines' KV (`AloneKV`): each span computed with only the prompt's first
token before it (none when that token is private or the span starts the prompt), against a
plain forward pass over exactly those tokens."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from cacheprune.engine import PrefillPlan
from cacheprune.serving import ServedRequest
from cacheprune.serving.kv_sources import AloneKV

TEXT = "The river ferry leaves the north pier every forty minutes from six in the morning."


@pytest.mark.parametrize("private_first, start, lead", [
    (False, 5, True), (False, 0, False), (True, 5, False)])
def test_a_span_is_computed_after_the_first_token_alone(default_model, private_first, start,
                                                        lead):
    model, tokenizer = default_model
    ids = tokenizer.encode(TEXT).ids
    private = np.zeros(len(ids), dtype=np.bool_)
    private[0] = private_first
    request = ServedRequest("r1", "tenant-a", np.asarray(ids, dtype=np.int64), private, None,
                            np.zeros(len(ids), dtype=np.bool_))
    end = start + 8
    keys, values, positions = AloneKV(model, request).segment(start, end)
    fed = ([ids[0]] if lead else []) + ids[start:end]
    reference = model.prefill(PrefillPlan.full(fed))
    skip = len(fed) - 8
    torch.testing.assert_close(keys, reference.keys[:, :, skip:], atol=1e-5, rtol=0)
    torch.testing.assert_close(values, reference.values[:, :, skip:], atol=1e-5, rtol=0)
    assert positions.tolist() == list(range(skip, skip + 8))
