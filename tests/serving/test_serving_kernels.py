"""The request path's numba kernels are loaded when an engine starts (`warm_kernels`): serving
requests that publish and reuse afterwards loads no kernel signature the start did not."""

from __future__ import annotations

import json
import subprocess
import sys

CHECK = """
import json
from cacheprune.annotator import segmentation
from cacheprune.engine import SamplingParams
from cacheprune.retriever import cover, rolling
from cacheprune.serving import Engine, EngineConfig

kernels = (rolling._window_hashes, cover._best_stretch_cover, segmentation.choose_segments,
           segmentation.score_segments)
assert not any(kernel.signatures for kernel in kernels), "loaded before the engine started"
engine = Engine.from_default(EngineConfig(publish_threshold=1))
at_start = [list(kernel.signatures) for kernel in kernels]
document = ("The harbour office prints the tide tables each spring, and the ferry timetable "
            "follows them closely. ") * 12
for tenant, profile in (("a", "Ada Lovegood, ada@example.com"), ("b", "Bo Quint, bo@x.org")):
    engine.generate(tenant, f"I am {profile}.\\n\\n{document}\\nQuestion: who prints them?",
                    SamplingParams(max_new_tokens=1))
after = [list(kernel.signatures) for kernel in kernels]
print(json.dumps({"at_start": [len(s) for s in at_start], "new": [
    len(set(a) - set(s)) for a, s in zip(after, at_start)], "entries": engine.pool.num_entries}))
"""


def test_an_engine_loads_every_kernel_its_requests_run_when_it_starts():
    # NOTE: a fresh process: this one's kernels may have run already.
    done = subprocess.run([sys.executable, "-c", CHECK], capture_output=True, text=True,
                          check=False, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    result = json.loads(done.stdout.strip().splitlines()[-1])
    assert all(count >= 1 for count in result["at_start"])
    assert result["entries"] >= 1, "nothing was published: the annotator never ran"
    assert result["new"] == [0, 0, 0, 0], "a request loaded a kernel signature the start did not"
