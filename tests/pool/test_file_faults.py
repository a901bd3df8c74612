"""The folder under faults: a FIFO for an entry, a held lock, a full disk, a read-only mount,
the documented folder taken by another user. Each is a miss and a metric, never an exception
or an unbounded wait in a request.

The full and read-only disks are real tmpfs mounts (root with mount rights); elsewhere those
tests are skipped."""

from __future__ import annotations

import contextlib
import fcntl
import os
import subprocess

import numpy as np
import pytest
from pool_helpers import counter, kv_for, make_pool, publish, scope, segment
from test_replay_and_erasure import hits

from cacheprune.pool import PoolConfigError
from cacheprune.pool.file_folder import default_pool_folder

NO_MASK = np.zeros(8, dtype=bool)


@contextlib.contextmanager
def tmpfs(folder, size: str):
    folder.mkdir()
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size},mode=0700", "tmpfs",
                              str(folder)], capture_output=True)
    if mounted.returncode != 0:
        pytest.skip("needs the right to mount a tmpfs")
    try:
        yield folder
    finally:
        subprocess.run(["umount", "-l", str(folder)], check=False)


def publish_and_serve(pool, tokens, request_id="writer") -> list:
    """What the engine does in a request: lookup, read, stage, commit; returns published."""
    keys, values, positions = kv_for(tokens)
    with pool.session(request_id, scope()) as session:
        for match in session.lookup(tokens, np.zeros(len(tokens), dtype=bool)):
            session.read(match)
        session.stage(tokens, keys, values, positions, np.zeros(len(tokens), dtype=bool),
                      np.zeros(len(tokens), dtype=bool))
        session.commit()
    return session.published


def test_a_fifo_in_place_of_an_entry_is_a_miss(tmp_path):
    pool = make_pool(64, url=f"file://{tmp_path / 'pool'}")
    publish(pool, segment(100, 8))
    (name,) = os.listdir(tmp_path / "pool" / "entries")
    os.unlink(tmp_path / "pool" / "entries" / name)
    os.mkfifo(tmp_path / "pool" / "entries" / name, 0o600)
    assert hits(pool, segment(100, 8)) == []  # returns: opened without blocking
    assert counter(pool, "cacheprune_pool_read_misses_total", reason="not_regular") >= 1


def test_a_held_lock_costs_one_timeout_then_publishes_are_skipped(tmp_path):
    pool = make_pool(64, url=f"file://{tmp_path / 'pool'}", store_timeout_s=0.1,
                     breaker_cooldown_s=0.2)
    holder = os.open(tmp_path / "pool" / "lock", os.O_RDWR | os.O_CREAT, 0o600)
    fcntl.flock(holder, fcntl.LOCK_EX)  # another process's hold (flock is per open file)
    try:
        assert publish_and_serve(pool, segment(100, 8), "a") == []
        assert publish_and_serve(pool, segment(200, 8), "b") == []
        assert counter(pool, "cacheprune_pool_store_errors_total", op="publish") == 1
        assert counter(pool, "cacheprune_pool_breaker_refusals_total") >= 1
    finally:
        os.close(holder)
    import time

    time.sleep(0.3)
    assert publish_and_serve(pool, segment(100, 8), "c")


def test_a_full_disk_loses_no_answer_and_leaves_no_entry_without_anchors(tmp_path):
    with tmpfs(tmp_path / "small", "64k") as folder:
        pool = make_pool(4096, max_context_tokens=2048, url=f"file://{folder / 'pool'}",
                         breaker_cooldown_s=0.01)
        published = [publish_and_serve(pool, segment(1000 * k, 256), f"r{k}")
                     for k in range(1, 8)]  # ~20 KB each: the disk fills up
        assert [] in published and counter(pool, "cacheprune_pool_store_errors_total") >= 1
        entries = set(os.listdir(folder / "pool" / "entries"))
        stored = {tuple(map(int, tokens)) for tokens in pool.stored_token_ids()}
        for k, names in enumerate(published, start=1):  # what was published is stored whole
            assert bool(names) == (tuple(segment(1000 * k, 256)) in stored)
        assert len(os.listdir(folder / "pool" / "anchors")) >= len(stored)
        assert {n for names in published for n in names} == {n for n in entries
                                                            if not n.startswith(".")}


def test_a_read_only_folder_serves_reads_and_drops_publishes(tmp_path):
    with tmpfs(tmp_path / "disk", "4m") as folder:
        url = f"file://{folder / 'pool'}"
        pool = make_pool(64, url=url, breaker_cooldown_s=0.01)
        publish(pool, segment(100, 8))
        remounted = subprocess.run(["mount", "-o", "remount,ro", str(folder)],
                                   capture_output=True)
        if remounted.returncode != 0:
            pytest.skip("needs the right to remount read-only")
        assert publish_and_serve(pool, segment(300, 8)) == []  # no OSError escapes
        assert counter(pool, "cacheprune_pool_store_errors_total") >= 1
        assert pool.num_leases == 0


def test_the_documented_folder_taken_by_another_user_names_the_way_out(tmp_path,
                                                                        monkeypatch):
    if os.geteuid() != 0:
        pytest.skip("needs root to create a folder owned by another user")
    taken = tmp_path / "cacheprune"
    taken.mkdir(mode=0o700)
    os.chown(taken, 12345, 12345)
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(tmp_path / "run"))
    (tmp_path / "run").mkdir(mode=0o700)
    with pytest.raises(PoolConfigError, match=f"file://{tmp_path / 'run' / 'cacheprune'}"):
        make_pool(64, url=f"file://{taken}")
    pool = make_pool(64, url=f"file://{default_pool_folder()}")  # the way out works
    assert publish(pool, segment(100, 8)).published
