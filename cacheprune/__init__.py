"""cacheprune: tenants of one LLM server share the KV cache of what is not private, token by
token, while private tokens are never looked up, stored or shared."""

__version__ = "0.1.0"
