"""First and last names of many countries, as a compact lookup derived once from names-dataset.

NOTE: names-dataset (PyPI, MIT, maintained) holds ~730k first and ~980k last names with their
popularity rank per country. Loading it costs ~12 s and ~1 GB per process (two pickles), too
much for every process that masks a request. So the first use derives a compact table (names
ranked within the top `MAX_RANK` of at least one country, ~0.3 M rows of plain text) and caches
it under $CACHEPRUNE_CACHE or ~/.cache/cacheprune; later processes read that table in a fraction
of a second. The table is named by the package's version and the derivation's settings, so an
upgrade derives a new one; the policy version hashes the same name.
"""

from __future__ import annotations

import functools
import gzip
import importlib.metadata
import os
import pickle  # noqa: S403 - names-dataset ships its data as pickles; only its own files are read
import tempfile
from importlib.util import find_spec
from pathlib import Path
from typing import NamedTuple

from cacheprune.detectors.base import DetectorUnavailableError

# A name is kept when at least one country ranks it this high; lower ranks are mostly noise
# in a data set collected from free-text profile fields.
MAX_RANK = 5000
# Ranks at or above this make a name 'common' there (a strong signal on its own).
COMMON_RANK = 1000
_FORMAT = 1
_INSTALL_HINT = "pip install 'names-dataset>=3.3,<4'"


class NameRanks(NamedTuple):
    """Best (smallest) popularity rank of a name over all countries; None: not that kind."""

    # NOTE: a NamedTuple, not a dataclass: ~0.5 M of them are built when the table is read,
    # and a tuple is several times cheaper to build than a frozen dataclass.
    first: int | None
    last: int | None


def cache_root() -> Path:
    # NOTE: the same place the model conversion uses; not imported from the model packages so
    # that detection never imports them.
    env = os.environ.get("CACHEPRUNE_CACHE")
    return Path(env) if env else Path.home() / ".cache" / "cacheprune"


def dataset_version() -> str:
    try:
        return importlib.metadata.version("names-dataset")
    except importlib.metadata.PackageNotFoundError as exc:
        raise DetectorUnavailableError(
            f"the name detector needs the names-dataset package; {_INSTALL_HINT}"
        ) from exc


def table_name() -> str:
    return f"names-{dataset_version()}-r{MAX_RANK}-f{_FORMAT}.tsv"


@functools.lru_cache(maxsize=1)
def load_gazetteer() -> dict[str, NameRanks]:
    """Casefolded single-word name -> its best ranks. Derives and caches the table if needed."""
    path = cache_root() / "names" / table_name()
    if not path.is_file():
        _write_table(path, derive_table())
    table: dict[str, NameRanks] = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        name, first, last = line.split("\t")
        table[name] = NameRanks(int(first) or None, int(last) or None)
    return table


def derive_table() -> dict[str, NameRanks]:
    """Read names-dataset's pickles, one at a time, and keep the well-ranked one-word names."""
    dataset_version()
    spec = find_spec("names_dataset")
    assert spec is not None and spec.origin is not None
    folder = Path(spec.origin).parent / "v3"
    best: dict[str, list[int]] = {}
    for column, file in enumerate(("first_names.pkl.gz", "last_names.pkl.gz")):
        with gzip.open(folder / file, "rb") as stream:
            entries = pickle.load(stream)  # noqa: S301 - the installed package's own data
        for name, info in entries.items():
            ranks = info.get("rank") or {}
            if not ranks or " " in name.strip():
                continue
            rank = min(ranks.values())
            if rank > MAX_RANK:
                continue
            key = name.strip().casefold()
            slot = best.setdefault(key, [0, 0])
            slot[column] = rank if slot[column] == 0 else min(slot[column], rank)
        del entries
    return {key: NameRanks(first or None, last or None) for key, (first, last) in best.items()}


def _write_table(path: Path, table: dict[str, NameRanks]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    # Written aside and renamed: a process that reads concurrently sees all or nothing.
    handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=".names-", suffix=".tmp")
    try:
        with os.fdopen(handle, "w", encoding="utf-8") as out:
            for name in sorted(table):
                ranks = table[name]
                out.write(f"{name}\t{ranks.first or 0}\t{ranks.last or 0}\n")
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise
