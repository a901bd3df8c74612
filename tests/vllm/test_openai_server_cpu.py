"""The OpenAI-compatible server started with the command docs/vllm.md documents, as pasted,
serving two tenants: the second reuses the first's document behind its own private profile,
and the figures the docs point to show it. The README shows the same command."""

from __future__ import annotations

import json
import os
import re
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest
from conftest import (
    ALICE,
    BOB,
    REPO,
    profile_first,
    public_document,
    shareable_document_tokens,
    subprocess_env,
)

pytestmark = pytest.mark.slow
DOCS = REPO / "docs" / "vllm.md"
MARKER = "<!-- the server command, run as pasted by tests/vllm/test_openai_server_cpu.py -->"
README = REPO / "README.md"
README_MARKER = ("<!-- the server command of docs/vllm.md, the same as pasted "
                 "(tests/vllm/test_openai_server_cpu.py) -->")


def documented_command(path: Path = DOCS, marker: str = MARKER) -> str:
    text = path.read_text()
    after = text[text.index(marker) + len(marker):]
    (block,) = re.findall(r"```bash\n(.*?)```", after, flags=re.S)[:1]
    return block


def test_the_readme_shows_the_tested_server_command():
    readme = documented_command(README, README_MARKER)
    assert readme == documented_command()
    assert "--tokenizer-mode cacheprune" in readme


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def get(url: str) -> str:
    with urllib.request.urlopen(url, timeout=10) as response:
        return response.read().decode()


def complete(base: str, prompt: str, salt: str) -> dict:
    body = json.dumps({"model": "smollm2", "prompt": prompt, "max_tokens": 1,
                       "temperature": 0, "cache_salt": salt}).encode()
    request = urllib.request.Request(f"{base}/v1/completions", data=body,
                                     headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=300) as response:
        return json.loads(response.read())


def counter(metrics: str, name: str) -> float:
    """Sum of a Prometheus counter over its label sets."""
    pattern = re.compile(rf"^{re.escape(name)}(\{{[^}}]*\}})? ([0-9.e+]+)$", re.M)
    return sum(float(value) for _, value in pattern.findall(metrics))


@pytest.fixture
def server(model_folder, tmp_path):
    port = free_port()
    command = documented_command() \
        .replace(".venv/bin/", f"{Path(sys.executable).parent}/") \
        .replace("--port 8000", f"--port {port}") \
        .replace("file:///dev/shm/cacheprune", f"file://{tmp_path / 'pool'}")
    env = subprocess_env()
    env.pop("CACHEPRUNE_POOL_KEY")  # the documented command sets its own
    log = (tmp_path / "server.log").open("w")
    process = subprocess.Popen(["bash", "-c", command], cwd=REPO, env=env, stdout=log,
                               stderr=subprocess.STDOUT, start_new_session=True)
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 360
        while True:
            try:
                get(f"{base}/health")
                break
            except OSError as error:
                if process.poll() is not None or time.monotonic() > deadline:
                    raise AssertionError("the server did not start:\n"
                                         + (tmp_path / "server.log").read_text()[-3000:]
                                         ) from error
                time.sleep(2)
        yield base
    finally:
        os.killpg(process.pid, signal.SIGTERM)
        process.wait(timeout=60)
        log.close()


def test_two_tenants_through_the_documented_server(server, tokenizer):
    document = public_document("server")
    first = complete(server, profile_first(ALICE, document), ALICE.salt)
    deadline = time.monotonic() + 120  # the publication runs after the first token
    while counter(get(f"{server}/metrics"), "cacheprune:published_tokens_total") == 0:
        assert time.monotonic() < deadline, "tenant A's segments were never published"
        time.sleep(0.5)
    pooled = counter(get(f"{server}/metrics"), "cacheprune:prompt_tokens_total")
    prompt = profile_first(BOB, document)
    second = complete(server, prompt, BOB.salt)
    metrics = get(f"{server}/metrics")
    served = re.search(r'^cacheprune:prompt_tokens_total\{[^}]*source="pool"[^}]*\} '
                       r"([0-9.e+]+)$", metrics, re.M)
    assert served is not None
    shareable = shareable_document_tokens(tokenizer, prompt, document)
    assert float(served.group(1)) >= 0.95 * len(shareable)
    assert counter(metrics, "cacheprune:prompt_tokens_total") > pooled
    # What the client sees: every prompt token but the last came from the connector.
    for response in (first, second):
        usage = response["usage"]
        assert usage["prompt_tokens_details"]["cached_tokens"] == usage["prompt_tokens"] - 1
    assert counter(metrics, "vllm:external_prefix_cache_hits_total") >= \
        second["usage"]["prompt_tokens"] - 1
