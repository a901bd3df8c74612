"""The shape of a Llama-family model, read from a GGUF header or a Hugging Face config.json."""

from __future__ import annotations

from dataclasses import dataclass

# Architectures our transformer implements: the same block (RMSNorm, RoPE, GQA, SwiGLU), Qwen2
# adding a bias to the Q/K/V projections.
SUPPORTED_ARCHITECTURES = ("llama", "mistral", "qwen2")


class ModelLoadError(ValueError):
    """A model source that cannot be loaded: the message says which file and what is wrong."""


@dataclass(slots=True, frozen=True)
class RopeScaling:
    """Llama-3-style frequency scaling; `None` on `ModelConfig` means plain RoPE."""

    kind: str  # "linear" or "llama3"
    factor: float
    low_freq_factor: float = 1.0
    high_freq_factor: float = 4.0
    original_max_position: int = 8192


@dataclass(slots=True, frozen=True)
class ModelConfig:
    architecture: str
    vocab_size: int
    hidden_size: int
    intermediate_size: int
    num_layers: int
    num_heads: int
    num_kv_heads: int
    head_dim: int
    max_context: int
    rope_theta: float
    rms_norm_eps: float
    qkv_bias: bool = False
    tie_embeddings: bool = False
    rope_scaling: RopeScaling | None = None

    def __post_init__(self) -> None:
        if self.architecture not in SUPPORTED_ARCHITECTURES:
            raise ModelLoadError(
                f"unknown architecture {self.architecture!r}; supported: "
                f"{', '.join(SUPPORTED_ARCHITECTURES)}"
            )
        if self.num_heads % self.num_kv_heads:
            raise ModelLoadError(
                f"num_heads={self.num_heads} is not a multiple of num_kv_heads={self.num_kv_heads}"
            )

    @property
    def kv_bytes_per_token(self) -> int:
        """float32 K and V of one token across all layers: what the pool budgets per token."""
        return 2 * self.num_layers * self.num_kv_heads * self.head_dim * 4
