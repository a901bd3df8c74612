"""The dataset downloader on archives and manifests built here; no network involved."""

from __future__ import annotations

import hashlib
import importlib.util
import json
import sys
import zipfile
from pathlib import Path
from types import ModuleType

import pytest

from eval.data import load_documents, project_data_dir

QASPER_ROWS = (
    '{"input": "Which corpus?", "context": "We use a corpus of letters.", "answers": ["letters"]}\n'
    '{"input": "How big?", "context": "We use a corpus of letters.", "answers": ["small"]}\n'
).encode()
QMSUM_ROWS = b'{"input": "Topic?", "context": "Chair: budget.", "answers": ["the budget"]}\n'


def _load_script() -> ModuleType:
    path = project_data_dir() / "download.py"
    spec = importlib.util.spec_from_file_location("datasets_download", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up while being built
    spec.loader.exec_module(module)
    return module


download = _load_script()


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _archive(tmp_path: Path) -> tuple[Path, str]:
    path = tmp_path / "data.zip"
    with zipfile.ZipFile(path, "w") as zipped:
        zipped.writestr("data/qasper.jsonl", QASPER_ROWS)
        zipped.writestr("data/qmsum.jsonl", QMSUM_ROWS)
    return path, _sha(path.read_bytes())


def _manifest(
    tmp_path: Path,
    archive_sha: str | None,
    qasper_sha: str | None,
    url: str = "https://example.invalid/data.zip",
    size: int | None = None,
) -> Path:
    members = [
        {"dataset": "qasper", "path": "data/qasper.jsonl", "target": "qasper/qasper.jsonl",
         "sha256": qasper_sha},
        {"dataset": "qmsum", "path": "data/qmsum.jsonl", "target": "qmsum/qmsum.jsonl",
         "sha256": _sha(QMSUM_ROWS)},
    ]  # fmt: skip
    manifest = {"format": 1, "archives": [
        {"name": "lb", "url": url, "sha256": archive_sha, "size": size, "members": members}
    ]}  # fmt: skip
    path = tmp_path / "manifest.json"
    path.write_text(json.dumps(manifest), encoding="utf-8")
    return path


def test_pinned_archive_is_extracted_into_the_loader_layout(tmp_path: Path) -> None:
    archive, archive_sha = _archive(tmp_path)
    manifest = _manifest(tmp_path, archive_sha, _sha(QASPER_ROWS))
    out = tmp_path / "out"
    argv = ["--archive", str(archive), "--manifest", str(manifest), "--out", str(out)]
    assert download.main(argv + ["--datasets", "qasper"]) == 0
    assert (out / "qasper" / "qasper.jsonl").read_bytes() == QASPER_ROWS
    assert not (out / "qmsum").exists()
    (document,) = load_documents("qasper", out)
    assert [q.question for q in document.queries] == ["Which corpus?", "How big?"]


def test_unpinned_archive_is_refused_unless_trusted(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    archive, archive_sha = _archive(tmp_path)
    manifest = _manifest(tmp_path, None, None)
    out = tmp_path / "out"
    argv = ["--archive", str(archive), "--manifest", str(manifest), "--out", str(out)]
    assert download.main(argv) == 1
    assert "not pinned" in capsys.readouterr().err
    assert not out.exists()
    assert download.main(argv + ["--trust-unpinned"]) == 0
    printed = capsys.readouterr().out
    assert f"pin sha256 = {archive_sha}" in printed
    assert f"pin sha256 = {_sha(QASPER_ROWS)}" in printed
    assert (out / "qmsum" / "qmsum.jsonl").read_bytes() == QMSUM_ROWS


def test_a_hash_mismatch_is_refused_even_when_trusting_unpinned(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    archive, archive_sha = _archive(tmp_path)
    out = tmp_path / "out"
    wrong = "0" * 64
    for manifest in (_manifest(tmp_path, wrong, _sha(QASPER_ROWS)),
                     _manifest(tmp_path, archive_sha, wrong)):  # fmt: skip
        argv = ["--archive", str(archive), "--manifest", str(manifest), "--out", str(out)]
        assert download.main(argv + ["--trust-unpinned", "--datasets", "qasper"]) == 1
        assert "does not match the pinned" in capsys.readouterr().err
        assert not (out / "qasper" / "qasper.jsonl").exists()
        assert not list(out.rglob("*.jsonl")) and not list(out.rglob("tmp*"))


def test_download_through_a_url(tmp_path: Path) -> None:
    archive, archive_sha = _archive(tmp_path)
    manifest = _manifest(tmp_path, archive_sha, _sha(QASPER_ROWS), url=archive.as_uri())
    out = tmp_path / "out"
    assert download.main(["--manifest", str(manifest), "--out", str(out)]) == 0
    assert (out / "_downloads" / "lb.zip").read_bytes() == archive.read_bytes()
    assert (out / "qmsum" / "qmsum.jsonl").read_bytes() == QMSUM_ROWS


def test_a_refused_download_is_not_kept(tmp_path: Path) -> None:
    archive, _ = _archive(tmp_path)
    manifest = _manifest(tmp_path, "1" * 64, None, url=archive.as_uri())
    out = tmp_path / "out"
    assert download.main(["--manifest", str(manifest), "--out", str(out)]) == 1
    assert not (out / "_downloads" / "lb.zip").exists()
    # Unpinned and untrusted: refused before anything is fetched.
    manifest = _manifest(tmp_path, None, None, url=archive.as_uri())
    assert download.main(["--manifest", str(manifest), "--out", str(out)]) == 1
    assert not (out / "_downloads" / "lb.zip").exists()


def test_a_member_missing_from_the_archive_is_named(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "data.zip"
    with zipfile.ZipFile(path, "w") as zipped:
        zipped.writestr("data/qmsum.jsonl", QMSUM_ROWS)
    manifest = _manifest(tmp_path, _sha(path.read_bytes()), None)
    argv = ["--archive", str(path), "--manifest", str(manifest), "--out", str(tmp_path / "o")]
    assert download.main(argv + ["--datasets", "qasper"]) == 1
    assert "member 'data/qasper.jsonl' (dataset qasper) is not in the archive" in (
        capsys.readouterr().err
    )


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"sha256": "ABC"}, r"members\[0\]: field 'sha256' must be null or 64 lowercase hex"),
        ({"target": "../escape.jsonl"}, r"members\[0\]: field 'target' must be a relative"),
        ({"target": "/abs/qasper.jsonl"}, r"members\[0\]: field 'target' must be a relative"),
        ({"dataset": "squad"}, r"members\[0\]: dataset 'squad' is not one of"),
        ({"path": ""}, r"members\[0\]: field 'path' must be a non-empty string"),
    ],
)
def test_manifest_errors_name_the_field(
    tmp_path: Path, change: dict[str, str], message: str
) -> None:
    path = _manifest(tmp_path, None, None)
    data = json.loads(path.read_text())
    data["archives"][0]["members"][0].update(change)
    path.write_text(json.dumps(data))
    with pytest.raises(download.ManifestError, match=message):
        download.load_manifest(path)
    del data["archives"][0]["members"][0]["sha256"]
    path.write_text(json.dumps(data))
    with pytest.raises(download.ManifestError):
        download.load_manifest(path)


def test_members_without_their_own_pin_are_covered_by_the_pinned_archive(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    archive, archive_sha = _archive(tmp_path)
    size = archive.stat().st_size
    manifest = _manifest(tmp_path, archive_sha, None, size=size)
    out = tmp_path / "out"
    argv = ["--archive", str(archive), "--manifest", str(manifest), "--out", str(out)]
    assert download.main(argv) == 0  # no --trust-unpinned needed
    assert f"sha256 {_sha(QASPER_ROWS)} (covered by the pinned lb archive)" in (
        capsys.readouterr().out
    )
    assert (out / "qasper" / "qasper.jsonl").read_bytes() == QASPER_ROWS


@pytest.mark.parametrize("delta", [-1, 1])
def test_an_archive_of_another_size_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], delta: int
) -> None:
    archive, archive_sha = _archive(tmp_path)
    size = archive.stat().st_size
    manifest = _manifest(tmp_path, archive_sha, _sha(QASPER_ROWS), size=size + delta)
    out = tmp_path / "out"
    argv = ["--archive", str(archive), "--manifest", str(manifest), "--out", str(out)]
    assert download.main(argv) == 1
    assert f"lb archive: {size} bytes, the pinned size is {size + delta} bytes" in (
        capsys.readouterr().err
    )
    assert not out.exists()
    assert archive.read_bytes()  # a local copy given by the user is never deleted


def test_a_download_longer_than_the_pin_is_stopped_and_not_kept(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    archive, archive_sha = _archive(tmp_path)
    pinned = archive.stat().st_size - 10
    manifest = _manifest(tmp_path, archive_sha, None, url=archive.as_uri(), size=pinned)
    out = tmp_path / "out"
    assert download.main(["--manifest", str(manifest), "--out", str(out)]) == 1
    assert f"more than the pinned {pinned} bytes received; download stopped" in (
        capsys.readouterr().err
    )
    assert not list((out / "_downloads").iterdir())


def test_a_download_of_the_right_size_but_another_hash_is_refused_and_not_kept(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    archive, archive_sha = _archive(tmp_path)
    other = archive_sha[::-1]
    manifest = _manifest(tmp_path, other, None, url=archive.as_uri(),
                         size=archive.stat().st_size)
    out = tmp_path / "out"
    assert download.main(["--manifest", str(manifest), "--out", str(out)]) == 1
    error = capsys.readouterr().err
    assert f"lb archive: SHA-256 {archive_sha} does not match the pinned {other}" in error
    assert "refused" in error
    assert not list((out / "_downloads").iterdir())
    assert not list(out.rglob("*.jsonl"))


@pytest.mark.parametrize("size", [0, -5, "113932529", True, 1.5])
def test_a_malformed_size_is_named(tmp_path: Path, size: object) -> None:
    path = _manifest(tmp_path, None, None)
    data = json.loads(path.read_text())
    data["archives"][0]["size"] = size
    path.write_text(json.dumps(data))
    with pytest.raises(download.ManifestError, match=r"archives\[0\]: field 'size' must be"):
        download.load_manifest(path)


LONGBENCH_REVISION = "5e628be450b7e67fb7ae6e201bd6d8f7056f7672"


def test_shipped_manifest_pins_longbench_at_a_fixed_revision() -> None:
    (archive,) = download.load_manifest(project_data_dir() / "manifest.json")
    assert archive.url == (
        f"https://huggingface.co/datasets/THUDM/LongBench/resolve/{LONGBENCH_REVISION}/data.zip"
    )
    assert archive.sha256 == "cb45b11a4133c6bc1d6a44b0f8e701335ff1e543195db1103472e575857f7f64"
    assert archive.size == 113_932_529
    assert {m.dataset for m in archive.members} == {"qasper", "narrativeqa", "qmsum"}
