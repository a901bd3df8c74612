"""Generic secrets: long random-looking tokens (keys, session tokens, hashes of credentials).

Provider keys with a known shape (Stripe, AWS, GitHub, Slack...) are rules in
`rules/secrets.yaml`; this detector catches the rest by how random a token looks: a run of
base64/hex characters, long enough, mixing character classes, with a high Shannon entropy per
character. Words, identifiers in snake_case and version strings have low entropy or no digits.
"""

from __future__ import annotations

import math
from collections import Counter
from typing import Any

import regex

from cacheprune.detectors.base import Detector, DetectorConfigError, Span

ENTITY = "SECRET"
_TOKEN = regex.compile(r"(?<![\w/+=.-])[A-Za-z0-9+/=_\-]{16,512}(?![\w/+=-])")
_HEX = regex.compile(r"[0-9a-fA-F]+")
_SEPARATORS = regex.compile(r"[-_/+]")
# NOTE: a hex digest named as one ('commit 9c4e1f2...', 'SHA-256: e7a1...') identifies public
# content (a commit, a release file); a key is never introduced by these words.
# So is a trace's, a span's, an event's or a request's id ('Trace ID: 4bf92f35...', 'etag=...').
_DIGEST_WORDS = regex.compile(
    r"(?i:(?<![\w])(?:commit|commits|sha-?(?:1|224|256|384|512)?|md5|hash|digest|checksum|"
    r"fingerprint|revision|rev|blob|tree|object id|oid|head|h1|integrity|etag|trace|traceid|"
    r"trace_id|span|spanid|span_id|event_id|eventid|request_id|requestid|correlation_id|"
    r"correlationid)(?![\w])[^\n]{0,32}$)"
)
# Subresource integrity ('sha512-9cUz...==', npm's lockfiles): a package's digest.
_INTEGRITY = regex.compile(r"sha(?:256|384|512)-[A-Za-z0-9+/]{40,}={0,2}")
# A Go module's hash in go.sum ('v1.5.3 h1:KhyjKVUg...='), an SSH key's fingerprint
# ('SHA256:nThbg6kX...', 'MD5:...'): a digest right after its algorithm's name, in any alphabet.
_NAMED_DIGEST = regex.compile(r"(?i:(?<!\w)(?:h1|sha-?(?:1|224|256|384|512)|md5)[:=]$)")
# A generated Kubernetes pod name: its deployment, a template hash and five characters.
_POD_NAME = regex.compile(r"[a-z][a-z0-9-]*-[0-9a-f]{8,10}-[0-9a-z]{5}")
# A digest after the file it checks on one line ('libfoo-3.1.0.tar.gz  e3b0c442...').
_FILE_BEFORE = regex.compile(r"[\w+-]+(?:\.[\w+-]+)*\.[A-Za-z][A-Za-z0-9]{0,4}[ \t]+$")
# 'orderNo=DD2025...', 'traceId=a3f9...': a key and its value, judged by the value.
_KEY_VALUE = regex.compile(r"[A-Za-z][A-Za-z0-9_-]{0,40}=(?=[^=])")
_DIGEST_WINDOW = 48
# 'sha256sum' output and its kin: a digest, two spaces (or ' *') and the file it checks.
_DIGEST_OUTPUT_WORDS = regex.compile(r"(?i:(?<![\w])(?:sha\d*sum|shasum|md5sum|b2sum|"
                                     r"certutil -hashfile|get-filehash)(?![\w]))")
_FILE_AFTER = regex.compile(r"(?: \*| {2})[\w./-]+")
# NOTE: a UUID or a ULID names a resource, a request or a trace; it is a secret only where a
# secret's or an account's word introduces it ('api_key', 'token', 'session', 'Chave PIX':
# Brazil's random payment keys are UUIDs), which the window reads.
_UUID = regex.compile(r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-"
                      r"[0-9a-fA-F]{12}")
_ULID = regex.compile(r"[0-7][0-9A-HJKMNP-TV-Z]{25}")
_SECRET_WORDS = regex.compile(
    r"(?i:(?:key|token|secret|passw|pwd|auth|credential|bearer|session|cookie|sid|signature|"
    r"private|apikey|access|refresh|client|chave|clave|clé|schlüssel|sleutel|klucz|chiave|pix|"
    r"wallet|payment|account|konto|conta|cuenta)[^\n]{0,40}$)"
)


def shannon_entropy(text: str) -> float:
    """Bits per character of the character distribution of `text`."""
    counts = Counter(text)
    total = len(text)
    return -sum(n / total * math.log2(n / total) for n in counts.values())


def is_public_id(text: str, start: int, end: int) -> bool:
    """Whether text[start:end] is a public identifier: a digest named as one, a checksum file's
    line, or a UUID or ULID that no secret's or account's word introduces."""
    token = text[start:end]
    before = text[max(0, start - _DIGEST_WINDOW):start]
    key = _KEY_VALUE.match(token)
    if key:  # 'ulid=01JH2Q...', 'sha256=e3b0...' read as key, value
        before, token = before + key.group(), token[key.end():]
    if (_INTEGRITY.fullmatch(token) or _POD_NAME.fullmatch(token)
            or _NAMED_DIGEST.search(before)):
        return True
    if _HEX.fullmatch(token):
        line = text[text.rfind("\n", 0, start) + 1:start]
        previous = text[text.rfind("\n", 0, max(0, start - len(line) - 1)) + 1:start]
        if (_DIGEST_WORDS.search(before) or _FILE_AFTER.match(text, end)
                or _FILE_BEFORE.search(line) or _DIGEST_OUTPUT_WORDS.search(previous)):
            return True
    if _UUID.fullmatch(token) or _ULID.fullmatch(token):
        return not _SECRET_WORDS.search(before)
    return False


class EntropySecretDetector(Detector):
    """Random-looking tokens of at least `min_length` characters."""

    def __init__(self, min_length: int = 20, min_entropy: float = 3.5,
                 min_hex_entropy: float = 3.0, name: str = "secrets") -> None:
        if min_length < 12:
            raise DetectorConfigError(
                f"detector '{name}': min_length must be >= 12 (shorter random-looking tokens "
                f"are mostly ordinary ids), got {min_length}"
            )
        self.name = name
        self.min_length = min_length
        self.min_entropy = min_entropy
        self.min_hex_entropy = min_hex_entropy

    def describe(self) -> dict[str, Any]:
        return {"min_length": self.min_length, "min_entropy": self.min_entropy,
                "min_hex_entropy": self.min_hex_entropy}

    def detect(self, text: str) -> list[Span]:
        spans = []
        for match in _TOKEN.finditer(text):
            start, end = match.span()
            key = _KEY_VALUE.match(match.group())
            if key:  # the value is what may be random, not its key's name
                start += key.end()
            token = text[start:end]
            if len(token) >= self.min_length and self._looks_random(token) and not (
                    is_public_id(text, match.start(), end)):
                spans.append(Span(ENTITY, start, end, 0.8, self.name))
        return spans

    def _looks_random(self, token: str) -> bool:
        core = token.rstrip("=")
        num_digits = sum(ch.isdigit() for ch in core)
        num_upper = sum(ch.isupper() for ch in core)
        num_lower = sum(ch.islower() for ch in core)
        num_separators = sum(ch in "-_/+" for ch in core)
        if num_separators * 4 > len(core):
            return False  # words joined by separators: snake_case, paths, hyphenated phrases
        segments = [s for s in _SEPARATORS.split(core) if s]
        if len(segments) >= 2 and sum(s.islower() and s.isalpha() or s.isdigit()
                                      for s in segments) * 2 >= len(segments):
            return False  # 'roberta-large-mnli-2020', 'state-of-the-art_results_2019'
        if _HEX.fullmatch(core) and num_digits >= 4 and (num_upper == 0 or num_lower == 0):
            return len(core) >= 32 and shannon_entropy(core) >= self.min_hex_entropy
        classes = (num_digits > 0) + (num_upper > 0) + (num_lower > 0)
        if classes < 3 and not (classes == 2 and num_digits >= 4):
            return False
        # Random text switches between digits, upper and lower case often; 'garg2012unsupervised'
        # (a citation key) or 'Version2024Release' switch a few times only.
        if _class_switches(core) < max(3, len(core) // 6):
            return False
        return shannon_entropy(core) >= self.min_entropy


def _class_switches(token: str) -> int:
    kinds = ["d" if ch.isdigit() else "u" if ch.isupper() else "l" if ch.islower() else "o"
             for ch in token]
    return sum(a != b for a, b in zip(kinds, kinds[1:], strict=False))
