"""Fetch the full QASPER, NarrativeQA and QMSum sets (LongBench's copies) and check their SHA-256.

    python datasets/download.py                      # all datasets into datasets/longbench/
    python datasets/download.py --datasets qasper --out /data/longbench
    python datasets/download.py --archive ~/data.zip # a copy of the archive fetched elsewhere

The archive is pinned in manifest.json by its URL (which names a fixed revision of the source
repository), its size in bytes and its SHA-256; it is checked after the download (or, with
--archive, before use) and refused when either differs. A file taken out of it is checked
against its own SHA-256 where the manifest pins one; where it does not (null), the archive's pin
covers it (its bytes are fixed by the archive's). An archive whose hash is not pinned (null) is
refused unless --trust-unpinned is given; the script then prints the hashes so that a maintainer
can pin them. The output folder has the layout `eval.data.load_documents` reads:
`<out>/<dataset>/<dataset>.jsonl`.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
import sys
import tempfile
import urllib.error
import urllib.request
import zipfile
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import IO, Any

HERE = Path(__file__).resolve().parent
DATASETS = ("qasper", "narrativeqa", "qmsum")
_SHA256 = re.compile(r"[0-9a-f]{64}")
_CHUNK = 1 << 20


class ManifestError(ValueError):
    """manifest.json is malformed; the message names the file and the field."""


class VerificationError(RuntimeError):
    """A file's size or SHA-256 does not match its pin, or is not pinned (without
    --trust-unpinned)."""


@dataclass(slots=True, frozen=True)
class Member:
    dataset: str
    path: str  # inside the archive
    target: str  # relative to the output folder
    sha256: str | None


@dataclass(slots=True, frozen=True)
class Archive:
    name: str
    url: str
    sha256: str | None
    size: int | None  # bytes; None: not pinned
    members: list[Member]


def _field(data: dict[str, Any], name: str, where: str) -> str:
    value = data.get(name)
    if not isinstance(value, str) or not value:
        raise ManifestError(f"{where}: field {name!r} must be a non-empty string")
    return value


def _hash_field(data: dict[str, Any], where: str) -> str | None:
    if "sha256" not in data:
        raise ManifestError(f"{where}: field 'sha256' is missing (null if not pinned yet)")
    value = data["sha256"]
    if value is None:
        return None
    if not isinstance(value, str) or not _SHA256.fullmatch(value):
        raise ManifestError(f"{where}: field 'sha256' must be null or 64 lowercase hex digits")
    return value


def _size_field(data: dict[str, Any], where: str) -> int | None:
    value = data.get("size")
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ManifestError(f"{where}: field 'size' must be null or a positive number of bytes")
    return value


def _relative_target(value: str, where: str) -> str:
    target = PurePosixPath(value)
    if target.is_absolute() or ".." in target.parts or "\\" in value:
        raise ManifestError(f"{where}: field 'target' must be a relative path without '..'")
    return value


def load_manifest(path: Path) -> list[Archive]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ManifestError(f"{path}: manifest not found") from None
    except json.JSONDecodeError as error:
        raise ManifestError(f"{path}:{error.lineno}: not valid JSON ({error.msg})") from None
    if not isinstance(data, dict) or data.get("format") != 1:
        raise ManifestError(f'{path}: expected an object with "format": 1')
    raw_archives = data.get("archives")
    if not isinstance(raw_archives, list) or not raw_archives:
        raise ManifestError(f"{path}: field 'archives' must be a non-empty list")
    archives = []
    for a_index, raw in enumerate(raw_archives):
        where = f"{path}: archives[{a_index}]"
        if not isinstance(raw, dict) or not isinstance(raw.get("members"), list):
            raise ManifestError(f"{where}: must be an object with a 'members' list")
        members = []
        for m_index, raw_member in enumerate(raw["members"]):
            m_where = f"{where}.members[{m_index}]"
            if not isinstance(raw_member, dict):
                raise ManifestError(f"{m_where}: must be an object")
            dataset = _field(raw_member, "dataset", m_where)
            if dataset not in DATASETS:
                raise ManifestError(f"{m_where}: dataset {dataset!r} is not one of {DATASETS}")
            members.append(
                Member(
                    dataset=dataset,
                    path=_field(raw_member, "path", m_where),
                    target=_relative_target(_field(raw_member, "target", m_where), m_where),
                    sha256=_hash_field(raw_member, m_where),
                )
            )
        archives.append(
            Archive(
                name=_field(raw, "name", where),
                url=_field(raw, "url", where),
                sha256=_hash_field(raw, where),
                size=_size_field(raw, where),
                members=members,
            )
        )
    return archives


def _copy_hashing(
    source: IO[bytes], destination: IO[bytes], max_bytes: int | None = None, label: str = ""
) -> tuple[str, int]:
    """Copy `source` to `destination`; (SHA-256, bytes). Stops with an error past `max_bytes`."""
    digest = hashlib.sha256()
    num_bytes = 0
    while chunk := source.read(_CHUNK):
        num_bytes += len(chunk)
        if max_bytes is not None and num_bytes > max_bytes:
            # A server that sends more than the pinned size is not sending the pinned file;
            # stop rather than fill the disk.
            raise VerificationError(
                f"{label}: more than the pinned {max_bytes} bytes received; download stopped"
            )
        digest.update(chunk)
        destination.write(chunk)
    return digest.hexdigest(), num_bytes


def sha256_file(path: Path) -> tuple[str, int]:
    """(SHA-256, size in bytes) of the file at `path`."""
    digest = hashlib.sha256()
    num_bytes = 0
    with path.open("rb") as stream:
        while chunk := stream.read(_CHUNK):
            digest.update(chunk)
            num_bytes += len(chunk)
    return digest.hexdigest(), num_bytes


def verify_size(label: str, actual: int, pinned: int | None) -> None:
    """Refuse a file whose size differs from its pin (a truncated or replaced download)."""
    if pinned is not None and actual != pinned:
        raise VerificationError(
            f"{label}: {actual} bytes, the pinned size is {pinned} bytes (a truncated or "
            "changed file); delete it and download it again"
        )


def verify(
    label: str, actual: str, pinned: str | None, trust_unpinned: bool, covered_by: str | None = None
) -> None:
    """Accept `actual` only if it equals the pin; an unpinned file only with trust_unpinned, or
    when `covered_by` names the verified archive whose pin fixes its bytes."""
    if pinned is None and covered_by is not None:
        print(f"ok {label}: sha256 {actual} (covered by the pinned {covered_by})")
        return
    if pinned is None:
        if not trust_unpinned:
            raise VerificationError(
                f"{label}: SHA-256 is not pinned in manifest.json (its hash is {actual}); "
                "rerun with --trust-unpinned to accept it and pin the hash"
            )
        print(f"UNPINNED {label}: accepted on --trust-unpinned; pin sha256 = {actual}")
        return
    if actual != pinned:
        # NOTE: refused even with --trust-unpinned: a pinned hash that fails means corruption
        # or a changed upstream; re-pinning is a deliberate edit (set it to null, rerun).
        raise VerificationError(
            f"{label}: SHA-256 {actual} does not match the pinned {pinned}; the file is corrupt "
            "or the source changed: refused (re-pinning is a deliberate edit of manifest.json)"
        )
    print(f"ok {label}: sha256 {actual}")


def fetch(url: str, destination: Path, max_bytes: int | None = None) -> tuple[str, int]:
    """Download `url` to `destination` (written only when complete); (SHA-256, bytes)."""
    destination.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.NamedTemporaryFile(dir=destination.parent, delete=False) as partial:
        try:
            with urllib.request.urlopen(url) as response:
                digest = _copy_hashing(response, partial, max_bytes, url)
        except urllib.error.URLError as error:
            os.unlink(partial.name)
            raise OSError(f"could not download {url}: {error.reason}") from None
        except BaseException:
            os.unlink(partial.name)
            raise
    os.replace(partial.name, destination)
    return digest


def extract(
    archive_path: Path, archive: Archive, members: list[Member], out_dir: Path, trust_unpinned: bool
) -> list[Path]:
    """Take `members` out of the zip into `out_dir`, each verified before it is put in place."""
    written = []
    with zipfile.ZipFile(archive_path) as zipped:
        names = set(zipped.namelist())
        for member in members:
            if member.path not in names:
                raise VerificationError(
                    f"{archive_path}: member {member.path!r} (dataset {member.dataset}) is not "
                    "in the archive"
                )
            target = out_dir / member.target
            target.parent.mkdir(parents=True, exist_ok=True)
            with tempfile.NamedTemporaryFile(dir=target.parent, delete=False) as partial:
                with zipped.open(member.path) as source:
                    digest, _ = _copy_hashing(source, partial)
            # NOTE: the archive's bytes were checked against its pin before this point, and a
            # zip member's bytes are a function of the archive's (zipfile checks each member's
            # CRC too): a pinned archive needs no separate pin per member.
            covered_by = f"{archive.name} archive" if archive.sha256 is not None else None
            try:
                verify(f"{archive.name}:{member.path}", digest, member.sha256, trust_unpinned,
                       covered_by)
            except VerificationError:
                os.unlink(partial.name)
                raise
            os.replace(partial.name, target)
            written.append(target)
    return written


def run(args: argparse.Namespace) -> list[Path]:
    written: list[Path] = []
    for archive in load_manifest(args.manifest):
        members = [m for m in archive.members if m.dataset in args.datasets]
        if not members:
            continue
        if args.archive is not None:
            archive_path = args.archive
            digest, num_bytes = sha256_file(archive_path)
        else:
            if archive.sha256 is None and not args.trust_unpinned:
                # Fail before a long download whose result would be refused anyway.
                raise VerificationError(
                    f"{archive.name} archive: SHA-256 is not pinned in manifest.json; rerun "
                    "with --trust-unpinned to download it, accept it and print the hash to pin"
                )
            archive_path = args.out / "_downloads" / f"{archive.name}.zip"
            print(f"downloading {archive.url}")
            digest, num_bytes = fetch(archive.url, archive_path, archive.size)
        try:
            verify_size(f"{archive.name} archive", num_bytes, archive.size)
            verify(f"{archive.name} archive", digest, archive.sha256, args.trust_unpinned)
        except VerificationError:
            if args.archive is None:
                archive_path.unlink()  # never keep a download that failed its check
            raise
        written += extract(archive_path, archive, members, args.out, args.trust_unpinned)
    return written


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--out",
        type=Path,
        default=HERE / "longbench",
        help="output folder (default: datasets/longbench)",
    )
    parser.add_argument("--datasets", nargs="+", choices=DATASETS, default=list(DATASETS))
    parser.add_argument("--manifest", type=Path, default=HERE / "manifest.json")
    parser.add_argument(
        "--archive",
        type=Path,
        default=None,
        help="use this local copy of the archive instead of downloading it",
    )
    parser.add_argument(
        "--trust-unpinned",
        action="store_true",
        help="accept files whose hash is not pinned yet, and print the hashes",
    )
    args = parser.parse_args(argv)
    try:
        written = run(args)
    except (ManifestError, VerificationError, zipfile.BadZipFile, OSError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 1
    for path in written:
        print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
