"""`python -m eval` refuses bad options with a message that names the problem, before any
model is loaded."""

from __future__ import annotations

import shlex
from pathlib import Path

import pytest

from eval.__main__ import _parser, main
from eval.runner import PAPER_BASELINE


def test_bad_options_get_a_clear_error(capsys, tmp_path):
    assert main(["--tenants", "2", "--tenants-per-query", "3"]) == 2
    assert "tenants_per_query must lie in [1, num_tenants=2], got 3" in capsys.readouterr().err
    assert main(["--dataset", "qasper", "--data-dir", str(tmp_path)]) == 2
    assert "qasper: dataset folder not found" in capsys.readouterr().err
    assert main(["--systems", "cacheprune_isolated"]) == 2
    assert "must include no_sharing" in capsys.readouterr().err
    assert main(["--max-docs", "0"]) == 2
    assert "--max-docs must be at least 1, got 0" in capsys.readouterr().err
    assert main(["--min-words", "100000"]) == 2
    assert "default: no document has 100000 words or more" in capsys.readouterr().err
    assert main(["--pool", "ftp://host/pool"]) == 2
    assert "--pool: pool URL 'ftp://host/pool': unknown scheme 'ftp'" in capsys.readouterr().err
    assert main(["--kv-storage-dtype", "float16"]) == 2
    assert "--kv-storage-dtype float16 needs a shared --pool" in capsys.readouterr().err


def test_vllm_backend_names_the_systems_it_has(capsys):
    assert main(["--backend", "vllm", "--systems", "no_sharing", "fixed_chunks_512"]) == 2
    err = capsys.readouterr().err
    assert "the vllm backend has no system fixed_chunks_512" in err
    assert "cacheprune_isolated" in err


def test_vllm_context_is_the_models_whole_only_when_a_prompt_needs_it():
    from eval.vllm_backend import SHORT_CONTEXT, engine_context

    assert engine_context(SHORT_CONTEXT, 8192) == SHORT_CONTEXT
    assert engine_context(SHORT_CONTEXT + 1, 8192) == 8192
    with pytest.raises(ValueError, match="more than the model's context of 8192"):
        engine_context(8193, 8192)


def test_the_demo_arguments_parse_and_serve_six_tenants_per_document():
    # `make demo`'s DEMO_ARGS (continued lines joined) as the shell hands them to the eval.
    makefile = (Path(__file__).parents[2] / "Makefile").read_text()
    block = makefile.split("DEMO_ARGS ?=", 1)[1]
    lines = []
    for line in block.splitlines():
        lines.append(line.rstrip("\\").strip())
        if not line.endswith("\\"):
            break
    args = _parser().parse_args(["--dataset", "default", *shlex.split(" ".join(lines))])
    assert "no_sharing" in args.systems and "cacheprune_isolated" in args.systems
    assert PAPER_BASELINE in args.systems  # the target is checked in both publish modes
    assert set(args.attack_systems) == {"global_prefix (unsafe)", "cacheprune_isolated"}
    # the unsafe cache is the attacks' positive control only: attacked, not served
    assert "global_prefix (unsafe)" not in args.systems
    assert args.dictionary_oracles == ["hits"]
    # enough tenants per document for warm requests under the default threshold (3)
    per_document = args.queries_per_doc * args.tenants_per_query
    assert args.tenants >= per_document == 6 and args.publish_threshold == 3
