"""A vLLM engine given a bad connector config refuses to start and says what is wrong."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from conftest import ENGINE_ARGS, subprocess_env

pytestmark = pytest.mark.slow

START = """
import json, sys
from vllm import LLM
from cacheprune.vllm import kv_transfer_config
LLM(sys.argv[1], kv_transfer_config=kv_transfer_config(**json.loads(sys.argv[2])),
    **json.loads(sys.argv[3]))
"""


def test_bad_extra_config_fails_at_start_up(model_folder, tmp_path):
    # Two mistakes at once: an unknown key and a budget smaller than zero.
    extra = {"pool_url": f"file://{tmp_path / 'pool'}", "pool_budget_bytes": -1,
             "pool_sise": 3}
    done = subprocess.run(
        [sys.executable, "-c", START, model_folder, json.dumps(extra), json.dumps(ENGINE_ARGS)],
        capture_output=True, text=True, env=subprocess_env(), timeout=300,
        check=False)
    assert done.returncode != 0
    assert "CachePruneConnector: bad kv_connector_extra_config" in done.stderr
    assert "'pool_budget_bytes'" in done.stderr and "'pool_sise'" in done.stderr
    assert not any(tmp_path.iterdir())  # nothing was created in the pool location
