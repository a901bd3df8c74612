#!/usr/bin/env python3
"""Validate the blind PII test set (stdlib only).

Usage: python3 check.py [path/to/file.jsonl]

Checks: each line is valid JSON; keys id/genre/language/text/values are
present and typed; ids are unique; language is a 2-letter ISO 639-1 code;
every kind is in the allowed list; every value is a non-empty exact
substring of its text. Warns (does not fail) when a value occurs inside a
longer alphanumeric token, or when one value is listed twice.
Prints counts per kind, genre and language.
"""

import collections
import json
import os
import sys

KINDS = {
    "PERSON",
    "EMAIL",
    "PHONE",
    "ADDRESS",
    "GOV_ID",
    "FINANCIAL",
    "SECRET",
    "DATE_OF_BIRTH",
    "IP_ADDRESS",
    "USERNAME",
    "MEDICAL_ID",
    "LICENSE_PLATE",
    "PERSONAL_ID",
}
REQUIRED = {"id": str, "genre": str, "language": str, "text": str, "values": list}


def main(path):
    errors, warnings = [], []
    kinds, genres, langs = collections.Counter(), collections.Counter(), collections.Counter()
    texts_with_pii = texts_free = 0
    seen_ids = set()
    with open(path, encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            if not line.strip():
                errors.append(f"line {n}: blank line")
                continue
            try:
                row = json.loads(line)
            except json.JSONDecodeError as e:
                errors.append(f"line {n}: invalid JSON: {e}")
                continue
            bad = False
            for key, typ in REQUIRED.items():
                if not isinstance(row.get(key), typ):
                    errors.append(f"line {n}: missing or mistyped key {key!r}")
                    bad = True
            extra = set(row) - set(REQUIRED)
            if extra:
                warnings.append(f"line {n}: extra keys {sorted(extra)}")
            if bad:
                continue
            rid, text = row["id"], row["text"]
            if rid in seen_ids:
                errors.append(f"line {n}: duplicate id {rid}")
            seen_ids.add(rid)
            lang = row["language"]
            if len(lang) != 2 or not lang.isalpha() or not lang.islower():
                errors.append(f"{rid}: language {lang!r} is not an ISO 639-1 code")
            genres[row["genre"]] += 1
            langs[lang] += 1
            if row["values"]:
                texts_with_pii += 1
            else:
                texts_free += 1
            pairs = set()
            for v in row["values"]:
                if not isinstance(v, dict) or set(v) != {"kind", "value"}:
                    errors.append(f"{rid}: value entry must be {{kind, value}}: {v!r}")
                    continue
                kind, value = v["kind"], v["value"]
                if kind not in KINDS:
                    errors.append(f"{rid}: unknown kind {kind!r}")
                if not isinstance(value, str) or not value:
                    errors.append(f"{rid}: empty or non-string value {value!r}")
                    continue
                if value not in text:
                    errors.append(f"{rid}: value not in text: {value!r}")
                    continue
                if (kind, value) in pairs:
                    warnings.append(f"{rid}: listed twice: {kind} {value!r}")
                pairs.add((kind, value))
                kinds[kind] += 1
                start = text.find(value)
                while start != -1:
                    end = start + len(value)
                    before = text[start - 1] if start > 0 else " "
                    after = text[end] if end < len(text) else " "
                    if (before.isalnum() and value[0].isalnum()) or (
                        after.isalnum() and value[-1].isalnum()
                    ):
                        # Scripts written without spaces (Thai, CJK) are expected to touch.
                        if not any(
                            0x0E00 <= ord(ch) <= 0x0E7F or ord(ch) >= 0x2E80 for ch in value
                        ):
                            warnings.append(
                                f"{rid}: {value!r} occurs inside a longer token at {start}"
                            )
                    start = text.find(value, start + 1)
    total = texts_with_pii + texts_free
    print(f"file: {path}")
    print(
        f"texts: {total} ({texts_with_pii} with PII, {texts_free} PII-free); "
        f"values: {sum(kinds.values())}"
    )
    for title, counter in (("kind", kinds), ("genre", genres), ("language", langs)):
        print(f"\nper {title}:")
        for key, count in sorted(counter.items(), key=lambda kv: (-kv[1], kv[0])):
            print(f"  {key:<18} {count}")
    missing = KINDS - set(kinds)
    if missing:
        warnings.append(f"kinds never used: {sorted(missing)}")
    for w in warnings:
        print("WARNING:", w)
    for e in errors:
        print("ERROR:", e)
    print(f"\n{len(errors)} error(s), {len(warnings)} warning(s)")
    return 1 if errors else 0


if __name__ == "__main__":
    default = os.path.join(os.path.dirname(os.path.abspath(__file__)), "blind_2026_12.jsonl")
    sys.exit(main(sys.argv[1] if len(sys.argv) > 1 else default))
