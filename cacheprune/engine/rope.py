"""Rotary position embeddings, and re-rotation of cached keys to new positions.

RoPE rotates each pair of key dimensions by an angle proportional to the position. Rotations
compose, so a key stored at position p becomes the key at position q by one more rotation of
q - p: this is what lets a segment's cached KV be reused anywhere in a new prompt.
"""

from __future__ import annotations

import math

import torch

from cacheprune.models.config import ModelConfig


def inverse_frequencies(config: ModelConfig) -> torch.Tensor:
    dim = config.head_dim
    inv_freq = 1.0 / (config.rope_theta ** (torch.arange(0, dim, 2, dtype=torch.float64) / dim))
    scaling = config.rope_scaling
    if scaling is None:
        return inv_freq
    if scaling.kind == "linear":
        return inv_freq / scaling.factor
    # llama3: long wavelengths are slowed by `factor`, short ones kept, a smooth ramp between.
    low_wavelen = scaling.original_max_position / scaling.low_freq_factor
    high_wavelen = scaling.original_max_position / scaling.high_freq_factor
    wavelen = 2 * math.pi / inv_freq
    smooth = (scaling.original_max_position / wavelen - scaling.low_freq_factor) / (
        scaling.high_freq_factor - scaling.low_freq_factor
    )
    scaled = torch.where(wavelen > low_wavelen, inv_freq / scaling.factor, inv_freq)
    is_medium = (wavelen <= low_wavelen) & (wavelen >= high_wavelen)
    blended = (1 - smooth) * inv_freq / scaling.factor + smooth * inv_freq
    return torch.where(is_medium, blended, scaled)


def cos_sin(inv_freq: torch.Tensor, positions: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """cos and signed sin tables of shape [len(positions), head_dim] for the half-split layout;
    the sin table's first half is negated, which spares `apply_rope` a negation pass.

    Angles are formed in float64: at positions in the thousands float32 angles lose the
    last bits, and a re-rotated key must match one computed in place.
    """
    angles = positions.to(torch.float64)[:, None] * inv_freq[None, :]
    sin = angles.sin()
    return torch.cat((angles, angles), dim=-1).cos().float(), torch.cat((-sin, sin), dim=-1).float()


def swap_halves(x: torch.Tensor) -> torch.Tensor:
    half = x.shape[-1] // 2
    return torch.cat((x[..., half:], x[..., :half]), dim=-1)


def apply_rope(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
    """Rotate `x` [..., head_dim] by the angles in the `cos_sin` tables (broadcast against x):
    each pair (x1, x2) of the half-split layout becomes (x1 cos - x2 sin, x2 cos + x1 sin)."""
    return torch.addcmul(x * cos, swap_halves(x), sin)


def move_keys(
    keys: torch.Tensor, inv_freq: torch.Tensor, old: torch.Tensor, new: torch.Tensor,
    out: torch.Tensor | None = None,
) -> torch.Tensor:
    """Keys [..., tokens, head_dim] rotated at positions `old`, re-rotated to positions `new`;
    written into `out` (the same shape) when given, with no temporaries: a prefill places
    thousands of reused keys per layer, and each temporary of that size costs a pass and
    fresh pages."""
    if torch.equal(old, new):
        return keys if out is None else out.copy_(keys)
    cos, sin = cos_sin(inv_freq, new - old)
    cos, sin = cos.to(keys.dtype), sin.to(keys.dtype)
    if out is None:
        return apply_rope(keys, cos, sin)
    # apply_rope, term by term: x cos, plus each half of x times the other half's signed sin.
    half = keys.shape[-1] // 2
    torch.mul(keys, cos, out=out)
    out[..., :half].addcmul_(keys[..., half:], sin[..., :half])
    out[..., half:].addcmul_(keys[..., :half], sin[..., half:])
    return out
