"""Polynomial rolling hash of fixed-size token windows, modulo the Mersenne prime 2^61 - 1.

The hash only proposes candidates; identity is always confirmed by SHA-256 (see `identity`).
Window `[p, p + window)` hashes to sum_i t[p + i] * base^(window - 1 - i) mod 2^61 - 1.
"""

from __future__ import annotations

import secrets

import numba
import numpy as np
import numpy.typing as npt

from cacheprune.tokens import MaskArray, TokenArray

MERSENNE_61 = (1 << 61) - 1

_P = np.uint64(MERSENNE_61)
_MASK30 = np.uint64((1 << 30) - 1)
_MASK31 = np.uint64((1 << 31) - 1)
_U30 = np.uint64(30)
_U31 = np.uint64(31)
_U61 = np.uint64(61)
_ONE = np.uint64(1)


def random_base() -> int:
    """A secret random base in [2^20, 2^61 - 2): an adversary cannot aim collisions at it."""
    return (1 << 20) + secrets.randbelow(MERSENNE_61 - 1 - (1 << 20))


def check_base(base: int) -> int:
    if not 2 <= base < MERSENNE_61 - 1:
        raise ValueError(f"rolling-hash base must lie in [2, 2^61 - 2), got {base}")
    return base


@numba.njit(cache=True, inline="always")
def _reduce(x: np.uint64) -> np.uint64:
    # 2^61 = 1 (mod 2^61 - 1): fold the high bits onto the low ones.
    folded = (x & _P) + (x >> _U61)
    if folded >= _P:
        folded -= _P
    return folded


@numba.njit(cache=True, inline="always")
def _mul_mod(a: np.uint64, b: np.uint64) -> np.uint64:
    # NOTE: numba has no 128-bit integers; split both factors at bit 31 so that every partial
    # product fits in 64 bits, and use 2^61 = 1 to fold (a*b < 2^122 never materializes).
    a_hi = a >> _U31
    a_lo = a & _MASK31
    b_hi = b >> _U31
    b_lo = b & _MASK31
    mid = a_lo * b_hi + a_hi * b_lo
    total = ((a_hi * b_hi) << _ONE) + (mid >> _U30) + ((mid & _MASK30) << _U31) + a_lo * b_lo
    return _reduce(total)


@numba.njit(cache=True)
def _window_hashes(
    tokens: npt.NDArray[np.uint32], is_private: npt.NDArray[np.bool_], window: int, base: np.uint64
) -> tuple[npt.NDArray[np.uint64], npt.NDArray[np.bool_]]:
    num_tokens = tokens.shape[0]
    hashes = np.zeros(num_tokens, dtype=np.uint64)
    is_valid = np.zeros(num_tokens, dtype=np.bool_)
    top = np.uint64(1)  # base^(window - 1): the weight of the token that leaves the window
    for _ in range(window - 1):
        top = _mul_mod(top, base)
    run_start = 0
    while run_start < num_tokens:
        if is_private[run_start]:
            run_start += 1
            continue
        run_end = run_start
        while run_end < num_tokens and not is_private[run_end]:
            run_end += 1
        if run_end - run_start >= window:
            value = np.uint64(0)
            for k in range(run_start, run_start + window):
                value = _reduce(_mul_mod(value, base) + np.uint64(tokens[k]))
            hashes[run_start] = value
            is_valid[run_start] = True
            for start in range(run_start + 1, run_end - window + 1):
                leaving = _mul_mod(np.uint64(tokens[start - 1]), top)
                value = _reduce(value + _P - leaving)
                value = _reduce(_mul_mod(value, base) + np.uint64(tokens[start + window - 1]))
                hashes[start] = value
                is_valid[start] = True
        run_start = run_end
    return hashes, is_valid


def window_hashes(
    tokens: TokenArray, private_mask: MaskArray, window: int, base: int
) -> tuple[npt.NDArray[np.uint64], npt.NDArray[np.bool_]]:
    """Rolling hash of every window of `window` tokens that contains no private token.

    Returns `(hashes, is_valid)`, both of length `len(tokens)`: `hashes[p]` is the hash of
    `tokens[p : p + window]` where `is_valid[p]`; private tokens never enter any hash.
    """
    if window < 1:
        raise ValueError(f"window must be at least 1 token, got {window}")
    if tokens.shape != private_mask.shape:
        raise ValueError(
            f"tokens {tokens.shape} and private_mask {private_mask.shape} differ in shape"
        )
    return _window_hashes(tokens, private_mask, window, np.uint64(check_base(base)))


def prefix_key(tokens: TokenArray, window: int, base: int) -> int:
    """The rolling hash of the first `window` tokens: the key an entry is indexed under."""
    if tokens.shape[0] < window:
        raise ValueError(
            f"need at least {window} tokens to form an index key, got {tokens.shape[0]}"
        )
    head = np.ascontiguousarray(tokens[:window])
    hashes, _ = window_hashes(head, np.zeros(window, dtype=np.bool_), window, base)
    return int(hashes[0])
