"""What an attacker with the folder or the server can do costs a miss, nothing more."""

from __future__ import annotations

import hashlib
import os
import stat

import numpy as np
import pytest
from pool_helpers import (
    TEST_POOL_KEY,
    kv_for,
    make_config,
    make_pool,
    overwrite,
    publish,
    scope,
    segment,
    stored_values,
)

from cacheprune.pool import PoolConfigError, open_pool
from cacheprune.retriever import unkeyed_entry_name
from cacheprune.tokens import as_token_array

NO_MASK = np.zeros(8, dtype=bool)


def read_first_match(pool, tokens):
    with pool.session("reader", scope()) as session:
        matches = session.lookup(tokens, np.zeros(len(tokens), dtype=bool))
        return matches, [session.read(match) for match in matches]


def test_names_do_not_confirm_a_guessed_prompt(shared_url):
    pool = make_pool(64, url=shared_url)
    guess = segment(100, 8)
    publish(pool, guess)
    (name,) = stored_values(shared_url)
    plain = {unkeyed_entry_name("model-a", "policy-1", as_token_array(guess)),
             hashlib.sha256(as_token_array(guess).tobytes()).hexdigest()}
    assert name not in plain


@pytest.mark.parametrize("damage", ["flip_kv", "truncate", "flip_head", "garbage"])
def test_corrupt_entry_is_a_miss_never_an_error(shared_url, damage):
    pool = make_pool(64, url=shared_url)
    publish(pool, segment(100, 8))
    ((name, value),) = stored_values(shared_url).items()
    if damage == "flip_kv":
        bad = value[:-40] + bytes([value[-40] ^ 1]) + value[-39:]
    elif damage == "truncate":
        bad = value[: len(value) // 2]
    elif damage == "flip_head":
        bad = value[:20] + bytes([value[20] ^ 1]) + value[21:]
    else:
        bad = os.urandom(len(value))
    overwrite(shared_url, name, bad)
    matches, parts = read_first_match(pool, segment(100, 8))
    assert all(part is None for part in parts)  # found from the index, refused when read
    assert pool.num_leases == 0
    assert "cacheprune_pool_read_misses_total" in pool.metrics_text()


def test_entry_planted_without_the_key_is_never_used(shared_url):
    """A process with another key writes a well-formed entry under the right name."""
    pool = make_pool(64, url=shared_url)
    intruder = open_pool(shared_url, pool.config, pool_key="intruder-key-0123456789abcdef")
    publish(intruder, segment(100, 8))  # its names and anchors are its own: not found
    assert read_first_match(pool, segment(100, 8))[0] == []
    publish(pool, segment(100, 8))
    real = {name for name in stored_values(shared_url)}
    planted = {name: value for name, value in stored_values(shared_url).items()}
    (intruder_name,) = set(planted) - {pool.staged_segment(scope(), "x",
                                                           as_token_array(segment(100, 8))).entry}
    (own_name,) = real - {intruder_name}
    overwrite(shared_url, own_name, planted[intruder_name])  # the intruder's bytes, our name
    matches, parts = read_first_match(pool, segment(100, 8))
    assert parts == [None] * len(matches)


def test_key_is_required_and_never_printed(tmp_path, monkeypatch):
    monkeypatch.delenv("CACHEPRUNE_POOL_KEY", raising=False)
    with pytest.raises(PoolConfigError, match="CACHEPRUNE_POOL_KEY"):
        open_pool(f"file://{tmp_path / 'pool'}", make_config(64))
    pool = open_pool(f"file://{tmp_path / 'pool'}", make_config(64), pool_key=TEST_POOL_KEY)
    assert TEST_POOL_KEY not in repr(pool.keys) + repr(vars(pool)) + pool.metrics_text()


def test_folder_of_another_mode_or_a_link_is_refused(tmp_path):
    loose = tmp_path / "loose"
    loose.mkdir(mode=0o755)
    os.chmod(loose, 0o755)
    with pytest.raises(PoolConfigError, match="0o755.*chmod 700"):
        make_pool(64, url=f"file://{loose}")
    target = tmp_path / "target"
    target.mkdir(mode=0o700)
    (tmp_path / "link").symlink_to(target)
    with pytest.raises(PoolConfigError, match="symbolic link"):
        make_pool(64, url=f"file://{tmp_path / 'link'}")
    fresh = tmp_path / "fresh"
    make_pool(64, url=f"file://{fresh}")
    assert stat.S_IMODE(fresh.stat().st_mode) == 0o700
    assert all(stat.S_IMODE(p.stat().st_mode) == 0o700 for p in fresh.iterdir() if p.is_dir())


def test_folder_of_another_user_is_refused(tmp_path):
    if os.geteuid() != 0:
        pytest.skip("needs root to create a folder owned by another user")
    folder = tmp_path / "theirs"
    folder.mkdir(mode=0o700)
    os.chown(folder, 12345, 12345)
    with pytest.raises(PoolConfigError, match="owned by uid 12345"):
        make_pool(64, url=f"file://{folder}")


def test_planted_symlinks_are_not_followed(tmp_path):
    url = f"file://{tmp_path / 'pool'}"
    pool = make_pool(64, url=url)
    outside = tmp_path / "outside"
    outside.write_bytes(b"")
    (tmp_path / "pool" / "lock").symlink_to(outside)
    publish(pool, segment(100, 8))  # the publish is dropped (counted), nothing is written
    assert outside.read_bytes() == b""
    assert 'cacheprune_pool_store_errors_total{op="publish"} 1.0' in pool.metrics_text()


def test_audit_log_is_private_and_names_no_tenant(tmp_path, shared_url):
    log = tmp_path / "audit.jsonl"
    pool = make_pool(64, url=shared_url, audit_log_path=str(log))
    publish(pool, segment(100, 8), in_scope=scope(tenant="alice-corp"))
    pool.erase_tenant("alice-corp")
    pool.close()
    assert stat.S_IMODE(log.stat().st_mode) == 0o600
    text = log.read_text()
    assert "alice-corp" not in text and pool.keys.tenant_tag("alice-corp") in text


def test_shapes_are_checked_against_the_model(shared_url):
    pool = make_pool(64, url=shared_url)
    publish(pool, segment(100, 8))
    keys, values, positions = kv_for(segment(100, 8))
    other_shape = make_config(64, min_entry_tokens=4)
    from dataclasses import replace

    from cacheprune.pool import KVShape

    wide = replace(other_shape, kv_shape=KVShape(num_layers=2, num_kv_heads=2, head_dim=2))
    reader = open_pool(shared_url, wide, pool_key=TEST_POOL_KEY)
    assert reader.stored_token_ids() == []  # heads of another shape are refused
