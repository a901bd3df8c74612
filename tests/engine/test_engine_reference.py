"""Our transformer against transformers' implementation on the same GGUF weights.

Tolerance: both run float32 on the same dequantized weights but sum in different orders
(fused Q/K/V and gate/up matmuls, OpenBLAS vs MKL, SDPA vs eager softmax). Measured max |diff|
on logits is 1e-4 at 40 tokens and 7e-4 at 741 (with either BLAS) against logits of magnitude
~40 after 30 layers, i.e. a few float32 ulps per layer; we allow 2e-3 absolute, about 3x the
largest observed error and far below any change in the argmax.
"""

from __future__ import annotations

import pytest
import torch

from cacheprune.engine import AttentionCapture, PrefillPlan, ReusedSpan
from cacheprune.engine.capture import CAPTURE_CHUNK

ATOL = 2e-3

PROSE = (
    "The committee reviewed the proposal in detail. Several members raised concerns about "
    "the timeline, while others argued that the budget of 4,250,000 dollars was sufficient. "
)


def _prompts(tokenizer):
    chat = tokenizer.render_chat([{"role": "user", "content": "What is 17 times 23?"}])
    return {
        "chat": tokenizer.encode(chat).ids,
        "short": tokenizer.encode("Hello").ids,
        "medium": tokenizer.encode(PROSE * 3).ids,
        "long": tokenizer.encode(PROSE * 20).ids,
    }


@pytest.mark.parametrize("name", ["short", "chat", "medium", "long"])
def test_logits_match_transformers(default_model, hf_reference, name):
    model, tokenizer = default_model
    ids = _prompts(tokenizer)[name]
    ours = model.logits(ids)
    with torch.no_grad():
        reference = hf_reference(torch.tensor([ids])).logits[0]
    print(f"{name}: {len(ids)} tokens, max |diff| {float((ours - reference).abs().max()):.2e}")
    torch.testing.assert_close(ours, reference, atol=ATOL, rtol=0)
    assert torch.equal(ours.argmax(-1), reference.argmax(-1))


def _reference_kv(hf_model, ids, position_ids=None):
    with torch.no_grad():
        out = hf_model(torch.tensor([ids]), position_ids=position_ids, use_cache=True)
    cache = out.past_key_values
    keys = torch.stack([layer.keys[0] for layer in cache.layers])
    values = torch.stack([layer.values[0] for layer in cache.layers])
    return out.logits[0], keys, values


def test_full_plan_kv_matches_transformers_cache(default_model, hf_reference):
    model, tokenizer = default_model
    ids = _prompts(tokenizer)["medium"]
    result = model.prefill(PrefillPlan.full(ids), all_logits=True)
    logits, keys, values = _reference_kv(hf_reference, ids)
    torch.testing.assert_close(result.logits, logits, atol=ATOL, rtol=0)
    torch.testing.assert_close(result.keys, keys, atol=ATOL, rtol=0)
    torch.testing.assert_close(result.values, values, atol=ATOL, rtol=0)


def test_captured_attention_matches_eager_attentions(default_model, hf_reference):
    model, tokenizer = default_model
    ids = _prompts(tokenizer)["medium"]
    layers, heads = [0, 7, 29], [1, 2, 8]  # the middle KV head has none of them
    with torch.no_grad():
        attentions = hf_reference(torch.tensor([ids]), output_attentions=True).attentions
    all_avg = torch.stack([a[0] for a in attentions]).mean(dim=(0, 1))
    subset_avg = torch.stack([attentions[i][0, heads] for i in layers]).mean(dim=(0, 1))
    full = model.prefill(PrefillPlan.full(ids), capture=AttentionCapture())
    subset = model.prefill(PrefillPlan.full(ids), capture=AttentionCapture(layers, heads))
    assert full.attention is not None and subset.attention is not None
    torch.testing.assert_close(full.attention, all_avg, atol=1e-5, rtol=0)
    torch.testing.assert_close(subset.attention, subset_avg, atol=1e-5, rtol=0)
    # capture must not change the model's output
    plain = model.prefill(PrefillPlan.full(ids))
    torch.testing.assert_close(full.logits, plain.logits, atol=ATOL, rtol=0)


def test_captured_rows_of_a_reuse_plan_match_eager_attentions(default_model, hf_reference):
    """Reused prefix (exact KV) with scattered recomputed rows: the computed rows, which span
    several capture chunks and are not contiguous, carry the full forward's attention rows;
    the last layer is captured too although only its last row's output is needed."""
    model, tokenizer = default_model
    ids = _prompts(tokenizer)["long"][:400]
    n, p = len(ids), 200
    with torch.no_grad():
        attentions = hf_reference(torch.tensor([ids]), output_attentions=True).attentions
    layers = [0, 15, 29]
    expected = torch.stack([attentions[i][0] for i in layers]).mean(dim=(0, 1))
    full = model.prefill(PrefillPlan.full(ids))
    recompute = torch.zeros(p, dtype=torch.bool)
    recompute[[3, 50, 51, 130, 199]] = True
    span = ReusedSpan(0, full.keys[:, :, :p].clone(), full.values[:, :, :p].clone(),
                      torch.arange(p), recompute)
    result = model.prefill(PrefillPlan(torch.tensor(ids), [span]),
                           capture=AttentionCapture(layers))
    assert result.attention is not None
    rows = result.computed_positions
    assert rows.numel() == 5 + n - p
    assert rows.numel() > CAPTURE_CHUNK  # a scattered chunk, then a contiguous one
    torch.testing.assert_close(result.attention[rows], expected[rows], atol=1e-5, rtol=0)
    skipped = torch.ones(n, dtype=torch.bool)
    skipped[rows] = False
    assert not result.attention[skipped].any()
    torch.testing.assert_close(result.logits, full.logits, atol=ATOL, rtol=0)

    # The same attention computed after a prefill that captured none (off the TTFT path),
    # which leaves that prefill's KV as it was.
    plain = model.prefill(PrefillPlan(torch.tensor(ids), [span]))
    keys, values = plain.keys.clone(), plain.values.clone()
    later = model.captured_attention(torch.tensor(ids), plain, AttentionCapture(layers))
    torch.testing.assert_close(later[rows], expected[rows], atol=1e-5, rtol=0)
    assert not later[skipped].any()
    assert torch.equal(plain.keys, keys) and torch.equal(plain.values, values)


def test_continuation_logits_match_transformers_after_a_reused_prefill(default_model,
                                                                      hf_reference):
    """Teacher-forced scoring after a partly reused prefill equals transformers' forward pass
    over prompt + continuation, row by row, and leaves the prompt's KV as it was."""
    model, tokenizer = default_model
    ids = _prompts(tokenizer)["medium"]
    continuation = tokenizer.encode(" The budget was approved by the board.").ids
    n, m = len(ids), len(continuation)
    full = model.prefill(PrefillPlan.full(ids))
    split = n // 2
    plan = PrefillPlan(torch.tensor(ids), [ReusedSpan(
        0, full.keys[:, :, :split].clone(), full.values[:, :, :split].clone(),
        torch.arange(split))])
    prefill = model.prefill(plan, capacity=n + m)
    prompt_keys = prefill.keys.clone()
    ours = model.continuation_logits(prefill, n, continuation)
    with torch.no_grad():
        reference = hf_reference(torch.tensor([ids + continuation])).logits[0, n - 1 : n + m - 1]
    assert ours.shape == (m, model.config.vocab_size)
    torch.testing.assert_close(ours, reference, atol=ATOL, rtol=0)
    assert torch.equal(prefill.keys, prompt_keys)
    with pytest.raises(ValueError, match="no room to score"):
        model.continuation_logits(model.prefill(PrefillPlan.full(ids)), n, continuation)
