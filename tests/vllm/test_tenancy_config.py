"""The tenants file the tenancy front reads: each mistake an operator can make stops the
server with a message that names it, and a good file maps keys to tenants and salts."""

from __future__ import annotations

import hashlib
import hmac
import json
from pathlib import Path

import pytest

from cacheprune.pool.keys import PoolKey
from cacheprune.vllm.salts import salt_problem
from cacheprune.vllm.tenancy_config import Tenancy, TenancyConfigError

POOL_KEY = "front-tests-pool-key-0123456789abcdef"
ALICE_KEY, BOB_KEY = "sk-alice-0123456789abcdef", "sk-bob-0123456789abcdef00"


def tenants_file(tmp_path: Path, content: object, mode: int = 0o600) -> Path:
    path = tmp_path / "tenants.json"
    path.write_text(content if isinstance(content, str) else json.dumps(content))
    path.chmod(mode)
    return path


def environment(path: Path | None, pool_key: str | None = POOL_KEY) -> dict[str, str]:
    env = {} if path is None else {"CACHEPRUNE_TENANTS_FILE": str(path)}
    return env if pool_key is None else {**env, "CACHEPRUNE_POOL_KEY": pool_key}


def test_keys_name_tenants_and_each_tenant_gets_a_keyed_salt(tmp_path):
    path = tenants_file(tmp_path, {"alice": [ALICE_KEY, ALICE_KEY + "2"], "bob": [BOB_KEY]})
    tenancy = Tenancy.from_environment(environment(path))
    assert tenancy.tenant(ALICE_KEY) == tenancy.tenant(ALICE_KEY + "2") == "alice"
    assert tenancy.tenant(BOB_KEY) == "bob"
    assert tenancy.tenant("") is None and tenancy.tenant(ALICE_KEY[:-1]) is None
    salt = tenancy.salt("alice")
    assert salt_problem(salt) is None and "alice" not in salt
    # Independent reference: HMAC-SHA256 of the name under the pool key's derived label.
    expected = hmac.new(PoolKey(POOL_KEY).derive("tenant-salt"), b"alice",
                        hashlib.sha256).hexdigest()[:32]
    assert salt == "cacheprune-" + expected
    other = Tenancy.from_environment(environment(path, "another-pool-key-0123456789abcdef"))
    assert other.salt("alice") != salt and other.salt("bob") != tenancy.salt("bob")


@pytest.mark.parametrize("content, mode, expected", [
    ({"alice": [ALICE_KEY]}, 0o644, "chmod 600"),
    ("{not json", 0o600, "not valid JSON"),
    ([ALICE_KEY], 0o600, "must be a JSON object"),
    ({}, 0o600, "must be a JSON object"),
    ({"alice": ALICE_KEY}, 0o600, "non-empty list"),
    ({"alice": []}, 0o600, "non-empty list"),
    ({"alice": ["short"]}, 0o600, "too short"),
    ({"alice": [ALICE_KEY + " x"]}, 0o600, "without spaces"),
    ({"alice": [ALICE_KEY], "bob": [ALICE_KEY]}, 0o600, "also a key of tenant 'alice'"),
    ({"": [ALICE_KEY]}, 0o600, "tenant names"),
])
def test_a_bad_tenants_file_is_refused_with_its_reason(tmp_path, content, mode, expected):
    path = tenants_file(tmp_path, content, mode)
    with pytest.raises(TenancyConfigError, match=expected) as error:
        Tenancy.from_environment(environment(path))
    assert ALICE_KEY not in str(error.value)  # keys are never quoted


def test_missing_settings_are_named(tmp_path):
    with pytest.raises(TenancyConfigError, match="CACHEPRUNE_TENANTS_FILE is not set"):
        Tenancy.from_environment(environment(None))
    with pytest.raises(TenancyConfigError, match="cannot read the tenants file"):
        Tenancy.from_environment(environment(tmp_path / "absent.json"))
    path = tenants_file(tmp_path, {"alice": [ALICE_KEY]})
    with pytest.raises(TenancyConfigError, match="CACHEPRUNE_POOL_KEY"):
        Tenancy.from_environment(environment(path, pool_key=None))
