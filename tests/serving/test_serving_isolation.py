"""Isolated publishing: a segment that follows a private token is shared with the KV it has
when every private token is left out of the prompt — checked against transformers."""

from __future__ import annotations

import numpy as np
import torch
from serving_helpers import DOCUMENT

from cacheprune.detectors import load_policy
from cacheprune.pool import Scope
from cacheprune.serving import Engine, EngineConfig, SamplingParams
from cacheprune.serving.prompt import render_prompt

MESSAGES = [
    {"role": "system", "content": "You answer questions about the ferry."},
    {"role": "user", "content": "I am Marta Kowalczyk, e-mail marta.k@example.net.\n\n"
                                f"{DOCUMENT}\n\nHow often does the ferry leave?"},
]


def test_isolated_segments_carry_the_kv_of_the_prompt_without_its_private_tokens(
    default_model, hf_reference
):
    model, tokenizer = default_model
    policy = load_policy()
    engine = Engine(model, tokenizer, policy,
                    EngineConfig(publish_threshold=1, publish_mode="isolated"))
    record = engine.generate("a", MESSAGES, SamplingParams(max_new_tokens=1))
    assert record.num_private > 0 and record.num_published_tokens > 0

    text, public = render_prompt(tokenizer, MESSAGES, ())
    encoding = tokenizer.encode(text)
    private = policy.mask(text, encoding.offsets, public).mask
    stripped = np.asarray(encoding.ids, dtype=np.int64)[~private]
    with torch.no_grad():
        out = hf_reference(torch.from_numpy(stripped)[None], use_cache=True)
    ref_keys = torch.stack([layer.keys[0] for layer in out.past_key_values.layers])
    ref_values = torch.stack([layer.values[0] for layer in out.past_key_values.layers])

    no_private = np.zeros(stripped.shape[0], dtype=bool)
    with engine.pool.session("check", Scope(engine.identity, "checker")) as session:
        matches = session.lookup(stripped, no_private)
        assert sum(m.length for m in matches) == record.num_published_tokens
        for match in matches:
            kv = session.read(match)
            assert kv is not None
            span = slice(match.request_start, match.request_end)
            # stored at the positions the tokens have in the private-free prompt
            np.testing.assert_array_equal(kv.positions, np.arange(span.start, span.stop))
            torch.testing.assert_close(kv.keys, ref_keys[:, :, span], atol=2e-3, rtol=0)
            torch.testing.assert_close(kv.values, ref_values[:, :, span], atol=2e-3, rtol=0)
