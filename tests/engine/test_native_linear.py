"""The native linear kernel (csrc/linear.c) against its twin, its build, and its fallbacks.

Tolerance: the kernel and torch both sum float32 products over k terms, in different orders;
we compare both to a float64 product and allow 1e-5 relative plus 2e-5 per sqrt(k) absolute,
a few float32 ulps of the inputs' scale.
"""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

from cacheprune.engine import native
from cacheprune.engine.linear import (
    MIN_ROWS,
    Linear,
    linear,
    native_linear,
    native_linear_available,
)


def _close_to_float64(result, x, weight, bias=None):
    expected = F.linear(x.double(), weight.double(), None if bias is None else bias.double())
    k = x.shape[-1]
    torch.testing.assert_close(result.double(), expected, rtol=1e-5, atol=2e-5 * k**0.5)


def test_kernel_builds_and_loads_here():
    # The project's set-up installs OpenBLAS and this machine has a C compiler: the tests must
    # exercise the kernel, not silently its twin.
    assert native_linear_available()


@pytest.mark.parametrize("rows", [1, 2, 17, 64, 1001])
@pytest.mark.parametrize("threads", [1, 2])
def test_kernel_matches_float64_on_every_row(rows, threads):
    generator = torch.Generator().manual_seed(rows)
    x = torch.randn(rows, 577, generator=generator)
    weight = torch.randn(95, 577, generator=generator)
    bias = torch.randn(95, generator=generator)
    before = torch.get_num_threads()
    torch.set_num_threads(threads)
    try:
        out = native_linear(x, weight, bias)
    finally:
        torch.set_num_threads(before)
    assert out.shape == (rows, 95)
    _close_to_float64(out, x, weight, bias)
    _close_to_float64(F.linear(x, weight, bias), x, weight, bias)  # the twin, same standard


def test_kernel_takes_batched_and_strided_input():
    x = torch.randn(3, 40, 64)[:, :, :32]  # not contiguous
    weight = torch.randn(48, 32)
    out = native_linear(x, weight)
    assert out.shape == (3, 40, 48)
    _close_to_float64(out, x, weight)


def test_linear_dispatches_by_row_count():
    layer = Linear(64, 32)
    many, few = torch.randn(MIN_ROWS, 64), torch.randn(MIN_ROWS - 1, 64)
    with torch.inference_mode():
        assert torch.equal(layer(many), native_linear(many, layer.weight, layer.bias))
        assert torch.equal(layer(few), F.linear(few, layer.weight, layer.bias))
    # With autograd on, the twin runs (the kernel has no backward) and gradients flow.
    layer(many).sum().backward()
    assert layer.weight.grad is not None


@pytest.mark.parametrize("rows", [MIN_ROWS - 1, 100])  # the twin, then the kernel
def test_linear_writes_into_out(rows):
    x, weight, bias = torch.randn(rows, 64), torch.randn(40, 64), torch.randn(40)
    buffer = torch.full((rows * 40 + 7,), float("nan"))
    out = buffer[:rows * 40].view(rows, 40)
    with torch.inference_mode():
        result = linear(x, weight, bias, out=out)
    assert result.data_ptr() == out.data_ptr()
    _close_to_float64(out, x, weight, bias)
    assert buffer[rows * 40:].isnan().all()  # nothing written past it


def test_bad_input_names_what_is_wrong():
    with pytest.raises(ValueError, match="x is torch.float64"):
        native_linear(torch.randn(4, 8, dtype=torch.float64), torch.randn(2, 8))
    with pytest.raises(ValueError, match="shapes don't match"):
        native_linear(torch.randn(4, 8), torch.randn(2, 9))
    with pytest.raises(ValueError, match=r"out must be a contiguous \(4, 2\) tensor"):
        native_linear(torch.randn(4, 8), torch.randn(2, 8), out=torch.empty(2, 4).t())


def test_build_is_cached_and_rebuilt_when_the_source_changes(tmp_path, monkeypatch):
    monkeypatch.setenv("CACHEPRUNE_CACHE", str(tmp_path / "cache"))
    csrc = tmp_path / "csrc"
    csrc.mkdir()
    (csrc / "linear.c").write_text((native.CSRC / "linear.c").read_text())
    monkeypatch.setattr(native, "CSRC", csrc)
    first = native.build("linear")
    stamp = first.stat().st_mtime_ns
    assert native.build("linear") == first and first.stat().st_mtime_ns == stamp
    (csrc / "linear.c").write_text((csrc / "linear.c").read_text() + "\n/* edited */\n")
    assert native.build("linear") != first


def test_build_failures_say_why_and_leave_no_partial_library(tmp_path, monkeypatch):
    monkeypatch.setenv("CACHEPRUNE_CACHE", str(tmp_path / "cache"))
    csrc = tmp_path / "csrc"
    csrc.mkdir()
    (csrc / "broken.c").write_text("this is not C;\n")
    monkeypatch.setattr(native, "CSRC", csrc)
    with pytest.raises(native.NativeBuildError, match="failed on broken.c"):
        native.build("broken")
    assert list((tmp_path / "cache" / "native").iterdir()) == []
    with pytest.raises(native.NativeBuildError, match="not found"):
        native.build("absent")
    with pytest.raises(native.NativeBuildError, match="compiler 'no-such-cc' not found"):
        native.build("broken", compiler="no-such-cc")


def test_unavailable_kernel_falls_back_to_the_twin(monkeypatch, caplog):
    load = native.load_kernel.__wrapped__  # the uncached loader
    monkeypatch.setenv("CACHEPRUNE_NATIVE", "0")
    assert load("linear") is None
    monkeypatch.delenv("CACHEPRUNE_NATIVE")
    monkeypatch.setenv("CC", "no-such-cc")
    monkeypatch.setenv("CACHEPRUNE_CACHE", "/nonexistent-cache-for-this-test")
    with caplog.at_level("WARNING"):
        assert load("linear") is None
    assert "using its torch twin" in caplog.text and "no-such-cc" in caplog.text
