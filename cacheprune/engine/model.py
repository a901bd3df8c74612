"""A compact Llama-family transformer (RMSNorm, RoPE, GQA, SwiGLU, optional QKV bias).

One forward primitive serves prefill and decode: compute the tokens at `positions`, write
their K/V into the sequence's buffer, and let each attend causally to every key at a position
at or before its own — reused (cached) or computed in this pass alike.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn

from cacheprune.engine.capture import CaptureState, attend_and_capture
from cacheprune.engine.linear import Linear
from cacheprune.engine.plan import AttentionCapture, KVBuffer, PrefillPlan, PrefillResult
from cacheprune.engine.rope import apply_rope, cos_sin, inverse_frequencies, move_keys
from cacheprune.models.config import ModelConfig, ModelLoadError

FILL_MIN = 0.5  # share of a pass's keys computed from which it runs as plain causal attention
# Rows under an explicit mask are split in parts, each over the keys its rows can see, when that
# leaves at most this share of the scores (`_split`).
SPLIT_MAX_SCORES = 0.5


class RMSNorm(nn.Module):
    def __init__(self, dim: int, eps: float) -> None:
        super().__init__()
        self.weight = nn.Parameter(torch.ones(dim))
        self.eps = eps

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps) * self.weight


@dataclass(slots=True)
class _Layout:
    """Where one pass's tokens sit and what they may attend to; the same for every layer, so it
    is worked out once per pass, not once per layer."""

    positions: torch.Tensor  # [m] ascending
    kv_len: int
    write: slice | torch.Tensor  # where the computed K/V go in the buffer
    mask: torch.Tensor | None  # [m, kv_len] bool, True = may attend
    is_causal: bool
    fill: bool = False  # the rows sit among blank ones, one per key, for plain causal attention
    # Or the rows in parts (their rows, their layout), each attending over its own first keys
    parts: tuple[tuple[slice, _Layout], ...] = ()

    @classmethod
    def of(cls, positions: torch.Tensor, kv_len: int) -> _Layout:
        m = positions.shape[0]
        first, last = int(positions[0]), int(positions[-1])
        write: slice | torch.Tensor = (
            slice(first, first + m) if last - first == m - 1 else positions
        )
        if m == kv_len:  # every token computed: plain causal attention
            return cls(positions, kv_len, write, None, True)
        if m == 1 and first == kv_len - 1:  # one new token sees everything
            return cls(positions, kv_len, write, None, False)
        if m >= FILL_MIN * kv_len and last == kv_len - 1:
            # NOTE: SDPA's CPU kernels run any mask but the plain causal one as an explicit
            # mask, slower than computing the whole prompt. With most rows computed (a tail
            # after a reused prefix, a cold request with a few hits), blank queries in the
            # reused rows make it plain causal attention again. (A prefill always computes its
            # last token, so its last row sees every key.)
            return cls(positions, kv_len, write, None, True, fill=True)
        split = _split(positions, kv_len)
        if split is not None:
            # NOTE: a warm prompt computes early rows (a private profile) and its last one:
            # scores of every row against every key, masked, cost several times the parts'.
            head, tail = positions[:split], positions[split:]
            parts = ((slice(0, split), cls.of(head, int(head[-1]) + 1)),
                     (slice(split, m), cls.of(tail, kv_len)))
            return cls(positions, kv_len, write, None, False, parts=parts)
        mask = torch.arange(kv_len)[None, :] <= positions[:, None]
        return cls(positions, kv_len, write, mask, False)

    def last_row(self) -> _Layout:
        """The same pass seen from its last token only (which sees every key before it)."""
        if self.parts:
            return self.parts[-1][1].last_row()
        last = self.positions[-1:]
        mask = None if self.mask is None else self.mask[-1:]
        return _Layout(last, self.kv_len, self.write, mask, False)

    def attend(self, q: torch.Tensor, keys: torch.Tensor, values: torch.Tensor) -> torch.Tensor:
        """SDPA of `q` [heads, m, d] over the pass's keys (the first `kv_len` of those given),
        as this layout allows."""
        keys, values = keys[:, : self.kv_len], values[:, : self.kv_len]
        if self.parts:
            return torch.cat([layout.attend(q[:, rows], keys, values)
                              for rows, layout in self.parts], dim=1)
        if self.fill:
            rows = q.new_zeros(q.shape[0], self.kv_len, q.shape[2])
            rows[:, self.positions] = q
            q = rows
        out = F.scaled_dot_product_attention(
            q[None], keys[None], values[None], attn_mask=self.mask, is_causal=self.is_causal,
            enable_gqa=True,
        )[0]
        return out[:, self.positions] if self.fill else out


def _split(positions: torch.Tensor, kv_len: int) -> int | None:
    """Where to split masked rows at `positions` (ascending) in two parts, the first attending
    over the keys up to its last row only: the split that leaves fewest scores, if it leaves
    at most `SPLIT_MAX_SCORES` of them; None otherwise."""
    m = int(positions.numel())
    if m < 2:
        return None
    heads = torch.arange(1, m)
    scores = heads * (positions[:-1] + 1) + (m - heads) * kv_len
    best = int(torch.argmin(scores))
    if int(scores[best]) > SPLIT_MAX_SCORES * m * kv_len:
        return None
    return best + 1


@dataclass(slots=True)
class _Sequence:
    """One prompt's part of a forward pass: its rows among the pass's rows, its KV buffer and
    its layout. A pass over several sequences (`Transformer.prefill_batch`) runs the linear
    layers on all their rows at once and attention per sequence."""

    rows: slice
    kv: KVBuffer
    layout: _Layout


class Attention(nn.Module):
    def __init__(self, config: ModelConfig) -> None:
        super().__init__()
        self.num_heads = config.num_heads
        self.num_kv_heads = config.num_kv_heads
        self.head_dim = config.head_dim
        qkv_out = (config.num_heads + 2 * config.num_kv_heads) * config.head_dim
        # NOTE: Q, K and V share one matmul (fused); loading splits nothing, it concatenates.
        self.qkv = Linear(config.hidden_size, qkv_out, bias=config.qkv_bias)
        self.o_proj = Linear(config.num_heads * config.head_dim, config.hidden_size, bias=False)

    def forward(
        self,
        x: torch.Tensor,
        cos: torch.Tensor,
        sin: torch.Tensor,
        layer: int,
        sequences: Sequence[_Sequence],
        capture: CaptureState | None,
        last_row_only: bool = False,
    ) -> torch.Tensor:
        """Write the K/V of every row of `x` into its sequence's buffer at `layer`; return the
        attention output of every row, or of each sequence's last row only."""
        m = x.shape[0]
        q_size, kv_size = self.num_heads * self.head_dim, self.num_kv_heads * self.head_dim
        qkv = self.qkv(x)
        # Q and K heads are rotated in one pass, in the token-major layout the matmul wrote.
        qk = qkv[:, : q_size + kv_size].view(m, self.num_heads + self.num_kv_heads, self.head_dim)
        qk = apply_rope(qk, cos, sin)
        q = qk[:, : self.num_heads].transpose(0, 1)
        k = qk[:, self.num_heads :].transpose(0, 1)
        v = qkv[:, q_size + kv_size :].view(m, self.num_kv_heads, self.head_dim).transpose(0, 1)
        outs = [self._attend(q[:, seq.rows], k[:, seq.rows], v[:, seq.rows], seq, layer,
                             capture, last_row_only) for seq in sequences]
        out = outs[0] if len(outs) == 1 else torch.cat(outs, dim=1)
        return self.o_proj(out.transpose(0, 1).reshape(out.shape[1], q_size))

    @staticmethod
    def _attend(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, seq: _Sequence,
                layer: int, capture: CaptureState | None, last_row_only: bool) -> torch.Tensor:
        """One sequence's rows: their K/V written, their attention over the sequence's keys."""
        layout = seq.layout
        layer_keys, layer_values = seq.kv.keys[layer], seq.kv.values[layer]
        layer_keys[:, layout.write] = k
        layer_values[:, layout.write] = v
        keys, values = layer_keys[:, : layout.kv_len], layer_values[:, : layout.kv_len]
        if capture is not None:  # the capture needs every row's attention, even then
            return attend_and_capture(q, keys, values, layout.positions, capture,
                                      last_row_only)
        if last_row_only:
            q, layout = q[:, -1:], layout.last_row()
        return layout.attend(q, keys, values)


class MLP(nn.Module):
    def __init__(self, config: ModelConfig) -> None:
        super().__init__()
        self.gate_up = Linear(config.hidden_size, 2 * config.intermediate_size, bias=False)
        self.down_proj = Linear(config.intermediate_size, config.hidden_size, bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        gate, up = self.gate_up(x).chunk(2, dim=-1)
        return self.down_proj(F.silu(gate) * up)


class Block(nn.Module):
    def __init__(self, config: ModelConfig) -> None:
        super().__init__()
        self.input_layernorm = RMSNorm(config.hidden_size, config.rms_norm_eps)
        self.attn = Attention(config)
        self.post_attention_layernorm = RMSNorm(config.hidden_size, config.rms_norm_eps)
        self.mlp = MLP(config)


class Transformer(nn.Module):
    def __init__(self, config: ModelConfig, model_id: str = "unnamed") -> None:
        super().__init__()
        self.config = config
        self.model_id = model_id
        self.embed_tokens = nn.Embedding(config.vocab_size, config.hidden_size)
        self.layers = nn.ModuleList(Block(config) for _ in range(config.num_layers))
        self.norm = RMSNorm(config.hidden_size, config.rms_norm_eps)
        self.lm_head = Linear(config.hidden_size, config.vocab_size, bias=False)
        if config.tie_embeddings:
            self.lm_head.weight = self.embed_tokens.weight
        self.inv_freq: torch.Tensor
        self.register_buffer("inv_freq", inverse_frequencies(config), persistent=False)

    @torch.inference_mode()
    def prefill(
        self,
        plan: PrefillPlan,
        capture: AttentionCapture | None = None,
        capacity: int | None = None,
        all_logits: bool = False,
    ) -> PrefillResult:
        """Run one prefill under `plan`. `capacity` reserves KV room for decoding after it."""
        plan.validate(self.config)
        kv, positions = self._place_reused(plan, capacity)
        n = plan.num_tokens
        state = None
        if capture is not None:
            state = CaptureState.of(capture, self.config, n)
        hidden = self._run_one(plan.token_ids[positions], positions, kv, n, state,
                               last_row_only=not all_logits)
        logits = self.lm_head(self.norm(hidden if all_logits else hidden[-1]))
        return _result(plan, kv, positions, logits,
                       None if state is None else state.matrix)

    @torch.inference_mode()
    def prefill_batch(self, plans: Sequence[PrefillPlan]) -> list[PrefillResult]:
        """The prefills of several prompts in one pass over the layers: the linear layers run
        on the computed rows of all of them at once, attention per prompt over its own keys.
        Each result is its prompt's `prefill(plan)` (up to the matmuls' rounding). What one
        pass saves is the per-prompt overhead around the matmuls, not their work: on the CPU
        they are compute-bound from a few dozen rows (docs/engine.md)."""
        if not plans:
            return []
        for plan in plans:
            plan.validate(self.config)
        sequences, token_ids, first_row = [], [], 0
        placed = [self._place_reused(plan) for plan in plans]
        for plan, (kv, positions) in zip(plans, placed, strict=True):
            rows = slice(first_row, first_row + int(positions.numel()))
            sequences.append(_Sequence(rows, kv, _Layout.of(positions, plan.num_tokens)))
            token_ids.append(plan.token_ids[positions])
            first_row = rows.stop
        hidden = self._run(torch.cat(token_ids), sequences, None, last_row_only=True)
        logits = self.lm_head(self.norm(hidden))  # one row per prompt: its last token's
        return [_result(plan, kv, positions, logits[i])
                for i, (plan, (kv, positions)) in enumerate(zip(plans, placed, strict=True))]

    def _place_reused(self, plan: PrefillPlan, capacity: int | None = None
                      ) -> tuple[KVBuffer, torch.Tensor]:
        """A KV buffer for the plan's prompt with its reused spans moved to their positions,
        and the positions the prefill computes."""
        n = plan.num_tokens
        kv = KVBuffer.allocate(self.config, max(capacity or n, n))
        for span in plan.reused:
            move_keys(span.keys, self.inv_freq, span.source_positions,
                      torch.arange(span.start, span.end),
                      out=kv.keys[:, :, span.start : span.end])
            kv.values[:, :, span.start : span.end] = span.values
        kv.length = n
        return kv, plan.compute_mask().nonzero().squeeze(1)

    @torch.inference_mode()
    def captured_attention(self, token_ids: torch.Tensor, prefill: PrefillResult,
                           capture: AttentionCapture) -> torch.Tensor:
        """The attention `prefill` (a prefill of `token_ids` that captured none) would have
        captured under `capture`: its computed rows run again over its KV, rows of the other
        tokens zero. For work after the answer, off the TTFT path; the KV is left as it was."""
        n = int(token_ids.numel())
        kv, positions = prefill.kv, prefill.computed_positions
        # NOTE: the rows' K/V are written again on the way, from hidden states the capture's
        # explicit attention computed (equal to the prefill's up to rounding): put back after,
        # so that the KV stays the one the answer was decoded with.
        keys, values = kv.keys[:, :, positions], kv.values[:, :, positions]  # copies
        with torch.device(kv.keys.device):
            state = CaptureState.of(capture, self.config, n)
            self._run_one(token_ids.to(kv.keys.device)[positions], positions, kv, n, state,
                          last_row_only=True)
        kv.keys[:, :, positions], kv.values[:, :, positions] = keys, values
        return state.matrix

    @torch.inference_mode()
    def continuation_logits(self, prefill: PrefillResult, num_prompt_tokens: int,
                            token_ids: Sequence[int]) -> torch.Tensor:
        """Next-token logits [len(token_ids), vocab] of `token_ids` teacher-forced after the
        prompt whose KV `prefill` holds: row 0 is the prefill's own (after the prompt), row i
        the distribution after `token_ids[:i]`. One pass over the continuation, after the
        answer: it overwrites the buffer past the prompt (the decode's K/V), never the prompt's.
        """
        first = prefill.logits if prefill.logits.dim() == 1 else prefill.logits[-1]
        fed = torch.as_tensor(list(token_ids[:-1]), dtype=torch.long)
        if fed.numel() == 0:
            return first[None]
        n, m = num_prompt_tokens, int(fed.numel())
        if n + m > prefill.kv.capacity:
            raise ValueError(f"no room to score {m + 1} tokens after a {n}-token prompt: the "
                             f"KV buffer holds {prefill.kv.capacity} tokens")
        positions = torch.arange(n, n + m)
        with torch.device(prefill.kv.keys.device):
            hidden = self._run_one(fed.to(prefill.kv.keys.device), positions, prefill.kv,
                                   n + m, None)
        return torch.cat([first[None], self.lm_head(self.norm(hidden))])

    @torch.inference_mode()
    def decode_step(self, token_id: int, kv: KVBuffer) -> torch.Tensor:
        """Append one token at position kv.length; returns its next-token logits."""
        if kv.length >= kv.capacity:
            raise ValueError(f"KV buffer full ({kv.capacity} tokens): no room to decode")
        if kv.length >= self.config.max_context:
            raise ValueError(f"context of {self.config.max_context} tokens exhausted")
        positions = torch.tensor([kv.length])
        hidden = self._run_one(torch.tensor([token_id]), positions, kv, kv.length + 1, None)
        kv.length += 1
        return self.lm_head(self.norm(hidden[-1]))

    def _run_one(
        self, token_ids: torch.Tensor, positions: torch.Tensor, kv: KVBuffer, kv_len: int,
        capture: CaptureState | None, last_row_only: bool = False,
    ) -> torch.Tensor:
        """`_run` over one sequence: its tokens at `positions`, attending to `kv_len` keys."""
        sequence = _Sequence(slice(0, int(positions.numel())), kv, _Layout.of(positions, kv_len))
        return self._run(token_ids, [sequence], capture, last_row_only)

    def _run(
        self, token_ids: torch.Tensor, sequences: Sequence[_Sequence],
        capture: CaptureState | None, last_row_only: bool = False,
    ) -> torch.Tensor:
        """The residual stream after the last block (before the final norm) for the rows of
        `sequences` (`token_ids`, in their order), or for each sequence's last row only: then
        the last block computes K/V for every row but attention output and MLP for the last
        rows alone, since nothing reads the others."""
        positions = torch.cat([seq.layout.positions for seq in sequences])
        cos, sin = cos_sin(self.inv_freq, positions)
        cos, sin = cos[:, None], sin[:, None]  # broadcast over heads
        x = self.embed_tokens(token_ids)
        last_layer = len(self.layers) - 1
        for i, layer in enumerate(self.layers):
            assert isinstance(layer, Block)
            layer_capture = capture if capture is not None and i in capture.layers else None
            last_only = last_row_only and i == last_layer
            attended = layer.attn(layer.input_layernorm(x), cos, sin, i, sequences,
                                  layer_capture, last_only)
            if last_only:
                x = x[[seq.rows.stop - 1 for seq in sequences]]
            x.add_(attended)
            x.add_(layer.mlp(layer.post_attention_layernorm(x)))
        return x

    @torch.inference_mode()
    def logits(self, token_ids: torch.Tensor | list[int]) -> torch.Tensor:
        """Plain forward pass: next-token logits for every prompt position [n, vocab]."""
        return self.prefill(PrefillPlan.full(token_ids), all_logits=True).logits

    @classmethod
    def from_state_dict(
        cls, config: ModelConfig, state: dict[str, torch.Tensor], model_id: str
    ) -> Transformer:
        """Build from Hugging Face parameter names (fusing Q/K/V and gate/up on the way)."""
        # NOTE: built on the meta device and then given the loaded tensors: a random init of
        # every Linear costs seconds and is overwritten anyway.
        with torch.device("meta"):
            model = cls(config, model_id)
        own: dict[str, torch.Tensor] = {}
        take = _Taker(state)
        own["embed_tokens.weight"] = take("model.embed_tokens.weight")
        own["norm.weight"] = take("model.norm.weight")
        own["lm_head.weight"] = (
            own["embed_tokens.weight"] if config.tie_embeddings else take("lm_head.weight")
        )
        for i in range(config.num_layers):
            p = f"model.layers.{i}."
            attn = p + "self_attn."
            own[f"layers.{i}.attn.qkv.weight"] = torch.cat(
                [take(attn + f"{x}_proj.weight") for x in "qkv"]
            )
            if config.qkv_bias:
                own[f"layers.{i}.attn.qkv.bias"] = torch.cat(
                    [take(attn + f"{x}_proj.bias") for x in "qkv"]
                )
            own[f"layers.{i}.attn.o_proj.weight"] = take(attn + "o_proj.weight")
            own[f"layers.{i}.mlp.gate_up.weight"] = torch.cat(
                [take(p + "mlp.gate_proj.weight"), take(p + "mlp.up_proj.weight")]
            )
            own[f"layers.{i}.mlp.down_proj.weight"] = take(p + "mlp.down_proj.weight")
            own[f"layers.{i}.input_layernorm.weight"] = take(p + "input_layernorm.weight")
            own[f"layers.{i}.post_attention_layernorm.weight"] = take(
                p + "post_attention_layernorm.weight"
            )
        expected = model.state_dict()
        for name, tensor in own.items():
            if tensor.shape != expected[name].shape:
                raise ModelLoadError(
                    f"weight for {name} has shape {tuple(tensor.shape)}, the config implies "
                    f"{tuple(expected[name].shape)}"
                )
        model.load_state_dict(own, assign=True)
        if config.tie_embeddings:
            model.lm_head.weight = model.embed_tokens.weight
        model.inv_freq = inverse_frequencies(config)
        return model.eval()


def _result(plan: PrefillPlan, kv: KVBuffer, positions: torch.Tensor, logits: torch.Tensor,
            attention: torch.Tensor | None = None) -> PrefillResult:
    covered, compute = plan.reused_mask(), plan.compute_mask()
    return PrefillResult(
        logits=logits,
        kv=kv,
        computed_positions=positions,
        num_reused=int((covered & ~compute).sum()),
        num_recomputed=int((covered & compute).sum()),
        num_computed=int((~covered).sum()),
        attention=attention,
    )


class _Taker:
    """Fetch named tensors from a state dict with an error that names the missing weight."""

    def __init__(self, state: dict[str, torch.Tensor]) -> None:
        self.state = state

    def __call__(self, name: str) -> torch.Tensor:
        if name not in self.state:
            raise ModelLoadError(f"weight {name!r} missing from the checkpoint")
        return self.state[name].float()
