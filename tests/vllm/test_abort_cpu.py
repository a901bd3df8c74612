"""An aborted request leaves nothing in the pool (a real abort in a real vLLM-CPU engine)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from conftest import ALICE, ENGINE_ARGS, HERE, VLLM_ENV, public_document

pytestmark = pytest.mark.slow


def test_aborted_request_leaves_nothing_in_the_pool(model_folder, tmp_path):
    prompt = {"prompt": public_document("aborted") + ALICE.question(), "cache_salt": ALICE.salt}
    done = subprocess.run(
        [sys.executable, str(HERE / "abort_scenario.py"), model_folder, str(tmp_path),
         json.dumps(ENGINE_ARGS), json.dumps(prompt)],
        capture_output=True, text=True, env={**os.environ, **VLLM_ENV}, timeout=400,
        check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    (line,) = [x for x in done.stdout.splitlines() if x.startswith("RESULT ")]
    result = json.loads(line.removeprefix("RESULT "))
    # The prefill had staged the request's public prefix: there was something to leak.
    assert result["before"] == {"staging": 1, "entries": 0, "leases": 0}
    assert result["after"] == {"staging": 0, "entries": 0, "leases": 0}
