"""cacheprune: tenants of one LLM server share the KV cache of what is not private, token by token."""

__version__ = "0.1.0"
