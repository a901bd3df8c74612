"""The documented server refuses to start, saying why, when its tenancy front cannot run: no
tenants file where the command points."""

from __future__ import annotations

import subprocess

import pytest
from conftest import REPO
from documented_server import documented_environment, free_port, prepared_command

pytestmark = pytest.mark.slow


def test_the_server_refuses_to_start_without_its_tenants_file(model_folder, tmp_path):
    done = subprocess.run(["bash", "-c", prepared_command(tmp_path, free_port())], cwd=REPO,
                          env=documented_environment(), capture_output=True, text=True,
                          timeout=600, check=False)
    assert done.returncode != 0
    output = done.stdout + done.stderr
    assert "cacheprune tenancy front cannot start: cannot read the tenants file " \
           "(CACHEPRUNE_TENANTS_FILE)" in output
    assert "Application startup complete" not in output
