"""The server command docs/vllm.md documents, started as pasted (only paths and the port
changed to the test's own), with its tenancy front serving four tenants (the default
publication threshold shares a text once three of them sent it); and plain-HTTP helpers to
talk to it."""

from __future__ import annotations

import contextlib
import json
import os
import re
import secrets
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from conftest import REPO, subprocess_env

DOCS = REPO / "docs" / "vllm.md"
MARKER = "<!-- the server command, run as pasted by tests/vllm/test_openai_server_cpu.py -->"


def documented_command(path: Path = DOCS, marker: str = MARKER) -> str:
    text = path.read_text()
    after = text[text.index(marker) + len(marker):]
    (block,) = re.findall(r"```bash\n(.*?)```", after, flags=re.S)[:1]
    return block


@dataclass(frozen=True)
class Served:
    base: str
    keys: dict[str, list[str]]  # tenant -> its API keys, as in the tenants file
    request_log: Path
    audit_log: Path
    log: Path


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def prepared_command(folder: Path, port: int) -> str:
    """The documented command with this checkout's Python, the port, and every file it names
    in `folder` (tenants.json, pool.key, pool/, audit.jsonl, requests.jsonl)."""
    return documented_command() \
        .replace(".venv/bin/", f"{Path(sys.executable).parent}/") \
        .replace("--port 8000", f"--port {port}") \
        .replace("cacheprune-pool.key", str(folder / "pool.key")) \
        .replace("=tenants.json", f"={folder / 'tenants.json'}") \
        .replace("file:///dev/shm/cacheprune", f"file://{folder / 'pool'}") \
        .replace('"request_log": "cacheprune-requests.jsonl"',
                 f'"audit_log": "{folder / "audit.jsonl"}", '
                 f'"request_log": "{folder / "requests.jsonl"}"')


def documented_environment() -> dict[str, str]:
    env = subprocess_env()
    env.pop("CACHEPRUNE_POOL_KEY")  # the documented command sets its own
    return env


@contextlib.contextmanager
def documented_server(folder: Path) -> Iterator[Served]:
    keys = {"alice": [f"sk-alice-{secrets.token_hex(12)}", f"sk-alice2-{secrets.token_hex(12)}"],
            "bob": [f"sk-bob-{secrets.token_hex(12)}"],
            "carla": [f"sk-carla-{secrets.token_hex(12)}"],
            "dan": [f"sk-dan-{secrets.token_hex(12)}"]}
    tenants = folder / "tenants.json"
    tenants.write_text(json.dumps(keys))
    tenants.chmod(0o600)
    port = free_port()
    served = Served(f"http://127.0.0.1:{port}", keys, folder / "requests.jsonl",
                    folder / "audit.jsonl", folder / "server.log")
    with served.log.open("w") as log:
        process = subprocess.Popen(["bash", "-c", prepared_command(folder, port)], cwd=REPO,
                                   env=documented_environment(), stdout=log,
                                   stderr=subprocess.STDOUT, start_new_session=True)
        try:
            _wait_healthy(served, process)
            yield served
        finally:
            os.killpg(process.pid, signal.SIGTERM)
            process.wait(timeout=60)


def _wait_healthy(served: Served, process: subprocess.Popen) -> None:
    deadline = time.monotonic() + 360
    while True:
        try:
            get(f"{served.base}/health")
            return
        except OSError as error:
            if process.poll() is not None or time.monotonic() > deadline:
                raise AssertionError("the server did not start:\n"
                                     + served.log.read_text()[-3000:]) from error
            time.sleep(2)


def get(url: str) -> str:
    with urllib.request.urlopen(url, timeout=10) as response:
        return response.read().decode()


@dataclass(frozen=True)
class Reply:
    status: int
    headers: dict[str, str]  # lower-case names
    body: bytes

    def json(self) -> dict:
        return json.loads(self.body)


def post(base: str, path: str, body: dict, api_key: str | None) -> Reply:
    """A POST as any HTTP client sends it (no SDK): errors come back as replies too."""
    headers = {"Content-Type": "application/json"}
    if api_key is not None:
        headers["Authorization"] = f"Bearer {api_key}"
    request = urllib.request.Request(f"{base}{path}", data=json.dumps(body).encode(),
                                     headers=headers)
    try:
        with urllib.request.urlopen(request, timeout=300) as response:
            return Reply(response.status, {k.lower(): v for k, v in response.headers.items()},
                         response.read())
    except urllib.error.HTTPError as error:
        return Reply(error.code, {k.lower(): v for k, v in error.headers.items()},
                     error.read())


def counter(metrics: str, name: str) -> float:
    """Sum of a Prometheus counter over its label sets."""
    pattern = re.compile(rf"^{re.escape(name)}(\{{[^}}]*\}})? ([0-9.e+]+)$", re.M)
    return sum(float(value) for _, value in pattern.findall(metrics))


def prefill_lines(request_log: Path, response_id: str) -> list[dict]:
    """The connector's prefill lines for one response: vLLM's engine request ids hold the
    front's request id, which is the response's `id` after its "cmpl-"/"chatcmpl-"."""
    front_id = response_id.split("-", 1)[1]
    return [line for line in map(json.loads, request_log.read_text().splitlines())
            if line["event"] == "prefill" and front_id in line["request_id"]]
