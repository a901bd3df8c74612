"""`python -m eval --backend vllm`: the same seeded workload through vLLM's offline engine.

Systems (named as their own-engine counterparts, so the report reads the same):
- no_sharing: plain vLLM without prefix caching (the full-recompute reference);
- tenant_prefix: vLLM's prefix cache, one `cache_salt` per tenant;
- global_prefix (unsafe): vLLM's prefix cache, unsalted: tenants hit each other's blocks;
- cacheprune_isolated: vLLM with the CachePruneConnector (salted tenants).

Each system is its own engine, run over the whole workload and then attacked, one after the
other (two vLLM engines do not fit this machine's cores side by side). What is measured is
what a client sees: time to first token (`RequestOutput.metrics.first_token_latency`) and
`num_cached_tokens`; where the connector's pool served a prompt comes from its request log.
"""

from __future__ import annotations

import json
import os
import re
import secrets
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tqdm import tqdm

from cacheprune.detectors import DetectionPolicy
from cacheprune.engine import RequestStats
from cacheprune.models import ChatTokenizer, Encoding
from cacheprune.serving import PublicRange, RenderedPrompt, RequestRecord, mask_prompt, render
from cacheprune.vllm import PUBLIC_RANGES_KEY
from eval.metrics import recovery
from eval.runner import (
    DocumentSenders,
    SystemResult,
    first_request_per_tenant,
    needed_senders,
    request_result,
)
from eval.vllm_probe import probe_cached_counts
from eval.workload import Request

# NOTE: spawn (a forked vLLM worker inherits numba, which breaks vLLM-CPU's start-up), the
# same cores for every system (vLLM-CPU reserves one more for a connector), a KV cache that
# fits a small machine, a local model folder (no hub access).
VLLM_ENV = {"VLLM_WORKER_MULTIPROC_METHOD": "spawn", "VLLM_CPU_NUM_OF_RESERVED_CPU": "1",
            "VLLM_CPU_KVCACHE_SPACE": "2", "HF_HUB_OFFLINE": "1"}
# vLLM's context when every prompt and its answer fit in it (a smaller start-up profile run);
# longer prompts get the model's whole context (SmolLM2: 8,192 tokens).
SHORT_CONTEXT = 4096


def engine_context(longest_sequence: int, model_context: int) -> int:
    """vLLM's `max_model_len` for a workload whose longest prompt plus answer is
    `longest_sequence` tokens (prompts are fitted to `model_context` beforehand)."""
    if longest_sequence > model_context:
        raise ValueError(f"a prompt and its answer take {longest_sequence} tokens, more than "
                         f"the model's context of {model_context}")
    return SHORT_CONTEXT if longest_sequence <= SHORT_CONTEXT else model_context


@dataclass(slots=True, frozen=True)
class VllmSystem:
    prefix_caching: bool
    salted: bool  # each tenant's requests carry its own cache_salt
    connector: bool


VLLM_SYSTEMS = {
    "no_sharing": VllmSystem(prefix_caching=False, salted=True, connector=False),
    "tenant_prefix": VllmSystem(prefix_caching=True, salted=True, connector=False),
    "global_prefix (unsafe)": VllmSystem(prefix_caching=True, salted=False, connector=False),
    "cacheprune_isolated": VllmSystem(prefix_caching=True, salted=True, connector=True),
}


def run_vllm_systems(names: list[str], model_folder: str, tokenizer: ChatTokenizer,
                     policy: DetectionPolicy, policy_path: str | None, requests: list[Request],
                     max_new_tokens: int, num_victims: int, work_dir: Path,
                     max_model_len: int, publish_threshold: int) -> list[SystemResult]:
    for key, value in VLLM_ENV.items():
        os.environ.setdefault(key, value)
    os.environ.setdefault("CACHEPRUNE_POOL_KEY", secrets.token_hex(32))
    results = []
    victims = first_request_per_tenant(requests)[:num_victims]
    for name in names:
        folder = work_dir / re.sub(r"[^a-z_]", "", name)
        system = VLLM_SYSTEMS[name]
        threshold = publish_threshold if system.connector else 1
        with _served(system, model_folder, tokenizer, policy, policy_path, folder,
                     max_new_tokens, max_model_len, threshold) as served:
            result = SystemResult(name, publish_threshold=threshold)
            senders = DocumentSenders()
            for request in tqdm(requests, desc=f"requests ({name})", unit="req"):
                record = served.serve(request)
                result.requests.append(request_result(tokenizer, request, record,
                                                      senders.before(request) >=
                                                      needed_senders(request, threshold)))
                senders.add(request)
            direct = probe_cached_counts(served.cached_tokens, tokenizer, victims)
            result.direct_leakage, result.direct_private_tokens = (direct.ratio,
                                                                   direct.num_private_tokens)
            result.contextual_exact, result.contextual_fuzzy = served.contextual(requests)
        results.append(result)
    return results


class _Served:
    """One vLLM engine serving the workload as one system."""

    def __init__(self, llm: Any, system: VllmSystem, tokenizer: ChatTokenizer,
                 policy: DetectionPolicy, work_dir: Path, max_new_tokens: int) -> None:
        self.llm = llm
        self.system = system
        self.tokenizer = tokenizer
        self.policy = policy
        self.request_log = work_dir / "requests.jsonl"
        self.pool_url = f"file://{work_dir / 'pool'}"
        self.max_new_tokens = max_new_tokens
        self._prompts: list[str] = []  # what tenants could hit in an unsalted cache

    def serve(self, request: Request) -> RequestRecord:
        from vllm import SamplingParams

        rendered, encoding = self.encoded(request.messages, request.public_char_ranges)
        text, public = rendered.text, rendered.public
        # NOTE: `mask_prompt`, not `admit`: the connector's public ranges need the rendered
        # text and its ranges, which `admit` (render, encode, `mask_prompt`) does not return.
        admitted = mask_prompt(request.request_id, request.tenant, text, encoding, self.policy,
                               public)
        logged = len(self._log("prefill"))
        settled = len(self._log("settled"))
        extra_args = None
        if public and self.system.connector:
            # The operator's declared public ranges (--documents-public), as the own engine
            # takes them: offsets into the text the connector decodes from the token ids.
            if self.tokenizer.decode(encoding.ids, skip_special_tokens=False) != text:
                raise RuntimeError(f"request {request.request_id}: its token ids do not decode "
                                   "to its prompt, so its public ranges cannot be passed on")
            extra_args = {"kv_transfer_params": {
                PUBLIC_RANGES_KEY: [list(item) for item in public]}}
        output = self._generate(encoding.ids, request.tenant, SamplingParams(
            temperature=0.0, max_tokens=self.max_new_tokens, extra_args=extra_args))
        spans: list[tuple[int, int]] = []
        recomputed = published = 0
        if self.system.connector and len(self._log("prefill")) > logged:
            # NOTE: the next request waits for this one's publication, as on the own engine.
            _wait_for(lambda: len(self._log("settled")) > settled)
            for line in self._log("prefill")[logged:]:
                # NOTE: the first tokens may come from vLLM's own prefix cache (the tenant's
                # own blocks of an earlier prompt, as in tenant_prefix), the rest from the pool.
                if line["num_local_tokens"]:
                    spans.append((0, line["num_local_tokens"]))
                spans += [(start, end) for start, end in line["reused_spans"]]
                recomputed += line["num_recomputed"]
            published = sum(line["num_published_tokens"]
                            for line in self._log("settled")[settled:])
        elif output.num_cached_tokens:
            spans = [(0, int(output.num_cached_tokens))]
        if not self.system.salted:
            self._prompts.append(text)
        num_hits = sum(end - start for start, end in spans)
        completion = output.outputs[0]
        stats = RequestStats(num_prompt_tokens=len(encoding.ids),
                             num_reused=num_hits - recomputed, num_recomputed=recomputed,
                             num_computed=len(encoding.ids) - num_hits,
                             ttft_s=float(output.metrics.first_token_latency), prefill_s=0.0,
                             num_generated=len(completion.token_ids))
        return RequestRecord(
            request_id=request.request_id, tenant=request.tenant, text=completion.text,
            token_ids=list(completion.token_ids), stats=stats,
            num_private=int(admitted.private.sum()), num_hit_tokens=num_hits, hit_spans=spans,
            private_mask=admitted.private, num_published_tokens=published, published=[],
            failed_closed_reason=admitted.failed_closed_reason,
            finish_reason=str(completion.finish_reason))

    def encoded(self, messages: list[dict[str, str]],
                public_ranges: Sequence[PublicRange] = ()) -> tuple[RenderedPrompt, Encoding]:
        """The rendered prompt and its tokens as the own engine and the connector's renderer
        (`tokenizer_mode="cacheprune"`) make them: message contents with special tokens split."""
        rendered = render(self.tokenizer, messages, public_ranges)
        return rendered, self.tokenizer.encode_prompt(rendered.text, rendered.untrusted)

    def cached_tokens(self, messages: list[dict[str, str]]) -> int:
        """The prober's oracle: the cached-token count vLLM reports to a client."""
        from vllm import SamplingParams

        output = self._generate(self.encoded(messages)[1].ids, "prober",
                                SamplingParams(temperature=0.0, max_tokens=1))
        return int(output.num_cached_tokens or 0)

    def _generate(self, token_ids: list[int], tenant: str, params: Any) -> Any:
        prompt: dict[str, Any] = {"prompt_token_ids": token_ids}
        if self.system.salted:
            prompt["cache_salt"] = tenant
        return self.llm.generate([prompt], params, use_tqdm=False)[0]

    def contextual(self, requests: list[Request]) -> tuple[float, float]:
        """(exact, fuzzy) share of private values readable in what tenants share: the pool's
        entries for the connector, every prompt for an unsalted prefix cache, none else."""
        shared = self._prompts
        if self.system.connector:
            shared = [self.tokenizer.decode(ids.tolist()) for ids in self._pool_token_ids()]
        values = [value for request in requests for value in request.private_values]
        if not values or not shared:
            return 0.0, 0.0
        result = recovery(values, "\n".join(shared))
        return result.exact_ratio, result.fuzzy_ratio

    def _pool_token_ids(self) -> list[Any]:
        from cacheprune.pool import KVShape, PoolConfig, open_pool

        model_config = self.llm.llm_engine.model_config
        shape = KVShape(model_config.get_num_layers(self.llm.llm_engine.vllm_config
                                                    .parallel_config),
                        model_config.get_total_num_kv_heads(), model_config.get_head_size())
        config = PoolConfig(shape, budget_bytes=4 << 30,
                            max_context_tokens=model_config.max_model_len)
        pool = open_pool(self.pool_url, config)
        try:
            return pool.stored_token_ids()
        finally:
            pool.close()

    def _log(self, event: str) -> list[dict[str, Any]]:
        if not self.request_log.exists():
            return []
        lines = map(json.loads, self.request_log.read_text().splitlines())
        return [line for line in lines if line["event"] == event]


@contextmanager
def _served(system: VllmSystem, model_folder: str, tokenizer: ChatTokenizer,
            policy: DetectionPolicy, policy_path: str | None, work_dir: Path,
            max_new_tokens: int, max_model_len: int, publish_threshold: int
            ) -> Iterator[_Served]:
    from vllm import LLM

    from cacheprune.vllm import kv_transfer_config

    work_dir.mkdir(parents=True, exist_ok=True)
    served = _Served(None, system, tokenizer, policy, work_dir, max_new_tokens)
    extra: dict[str, Any] = {}
    if system.connector:
        extra["kv_transfer_config"] = kv_transfer_config(
            pool_url=served.pool_url, request_log=str(served.request_log),
            detector_config=policy_path, accept_public_ranges=True,
            publish_threshold=publish_threshold)
    served.llm = LLM(model_folder, dtype="float32", enforce_eager=True,
                     max_model_len=max_model_len, seed=0,
                     enable_prefix_caching=system.prefix_caching, disable_log_stats=False,
                     **extra)
    try:
        yield served
    finally:
        served.llm.llm_engine.engine_core.shutdown()


def _wait_for(condition: Callable[[], bool], timeout_s: float = 600.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not condition():
        if time.monotonic() > deadline:
            raise RuntimeError("the vLLM engine did not settle a request's publication in "
                               f"{timeout_s:.0f} s")
        time.sleep(0.05)
