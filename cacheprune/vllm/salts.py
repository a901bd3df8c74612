"""What the connector accepts as a tenant's `cache_salt`.

vLLM's OpenAI server refuses some salts (longer than 128 characters, or holding '@', '/', '\\'
or NUL), but its offline `LLM` passes any value through, and an invalid salt crashed whole
engines in another connector (CVE-2026-105756). The connector therefore checks every salt
itself: a salt it does not accept makes the request isolated (vLLM computes it alone, nothing
is looked up or published), never an exception in vLLM's scheduling loop.
"""

from __future__ import annotations

MAX_SALT_CHARS = 128  # vLLM's own bound on the OpenAI server


def salt_problem(salt: object) -> str | None:
    """Why `salt` is not a valid tenant salt, or None when it is. The reason never quotes the
    salt: a salt may be a secret (the tenancy front's are keyed hashes)."""
    if not isinstance(salt, str):
        return f"not a string ({type(salt).__name__})"
    if not salt:
        return "empty"
    if len(salt) > MAX_SALT_CHARS:
        return f"{len(salt)} characters, more than {MAX_SALT_CHARS}"
    if not salt.isprintable():
        return "holds a control or non-printable character"
    try:
        salt.encode("utf-8")
    except UnicodeEncodeError:
        return "not valid UTF-8 (a lone surrogate)"
    return None
