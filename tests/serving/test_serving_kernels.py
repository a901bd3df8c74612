"""The request path's numba kernels are loaded when an engine starts (`warm_kernels`), so the
first request does not pay for loading them."""

from __future__ import annotations

import json
import subprocess
import sys

CHECK = """
from cacheprune.annotator import segmentation
from cacheprune.retriever import cover, rolling
kernels = (rolling._window_hashes, cover._best_stretch_cover, segmentation.choose_segments)
assert not any(kernel.signatures for kernel in kernels), "loaded before the warm-up"
from cacheprune.serving.kernels import warm_kernels
warm_kernels()
print([len(kernel.signatures) for kernel in kernels])
"""


def test_warm_kernels_loads_every_kernel_of_the_request_path():
    # NOTE: a fresh process: this one's kernels may have run already.
    done = subprocess.run([sys.executable, "-c", CHECK], capture_output=True, text=True,
                          check=False, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    counts = json.loads(done.stdout.strip().splitlines()[-1])
    assert len(counts) == 3 and all(count >= 1 for count in counts)
