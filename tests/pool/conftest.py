"""Backends for the pool tests: memory://, a private folder, and a real Valkey server.

The Valkey server is started once per test session on a unix socket in a temporary folder and
flushed before each test that uses it; nothing is mocked.
"""

from __future__ import annotations

import pytest
import redis

from cacheprune.pool.local_valkey import LocalValkey

BACKENDS = ("memory", "file", "valkey")


@pytest.fixture(scope="session")
def valkey_server(tmp_path_factory):
    server = LocalValkey(tmp_path_factory.mktemp("valkey"))
    server.start()
    yield server
    server.stop()


def flushed(server: LocalValkey) -> str:
    client = redis.Redis(unix_socket_path=str(server.socket))
    client.flushdb()
    client.close()
    return server.url


@pytest.fixture(params=BACKENDS)
def pool_url(request, tmp_path):
    """One URL per backend; each test gets an empty pool."""
    if request.param == "memory":
        return "memory://"
    if request.param == "file":
        return f"file://{tmp_path / 'pool'}"
    return flushed(request.getfixturevalue("valkey_server"))


@pytest.fixture(params=BACKENDS[1:])
def shared_url(request, tmp_path):
    """The backends shared between processes."""
    if request.param == "file":
        return f"file://{tmp_path / 'pool'}"
    return flushed(request.getfixturevalue("valkey_server"))


@pytest.fixture
def valkey_url(valkey_server):
    """The test session's Valkey server, flushed."""
    return flushed(valkey_server)
