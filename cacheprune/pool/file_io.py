"""The pool folder's files, handled safely: every call goes through the directory descriptors
`open_pool_folder` checked (file_folder.py), with O_NOFOLLOW, on names the caller generated.

Files are opened with O_NONBLOCK and used only if they are regular (a FIFO planted under one of
our names is a miss, never a wait); a file is written whole under a temporary name and renamed
into place (a reader sees all of it or nothing); the folder's lock is waited for at most a
deadline. An `OSError` other than a missing file becomes a `MediumError`, except where a method
says it raises the `OSError` itself (the caller undoes a half-done step first).
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import secrets
import stat
import time
from collections.abc import Callable, Iterator

from cacheprune.pool.file_folder import open_pool_folder
from cacheprune.pool.shared_medium import MediumError

_FILE_FLAGS = os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK
_LOCK_POLL_S = 0.005


class FolderFiles:
    """One process's descriptors of a pool folder and the file operations on them."""

    def __init__(self, root: str, lock_timeout_s: float,
                 on_not_regular: Callable[[str], None]) -> None:
        """`on_not_regular(name)` is called when a name we read is not a regular file."""
        self._dirs = open_pool_folder(root)
        self._lock_timeout_s = lock_timeout_s
        self._on_not_regular = on_not_regular

    def read(self, folder: str, name: str, limit: int | None = None, *,
             record_size: int | None = None) -> bytes | None:
        """The file's bytes (the first `limit`); None if it is missing or not a regular file.
        With `record_size`: b"\\x00" if it is not a whole number of records."""
        try:
            descriptor = os.open(name, os.O_RDONLY | _FILE_FLAGS, dir_fd=self._dirs[folder])
        except FileNotFoundError:
            return None
        except OSError as error:  # a link planted under one of our names, or I/O
            raise MediumError(f"{folder}/{name[:16]}...: {error.strerror}") from error
        with os.fdopen(descriptor, "rb") as file:
            info = os.fstat(file.fileno())
            if not stat.S_ISREG(info.st_mode):
                self._on_not_regular(name)
                return None
            if record_size is not None and info.st_size % record_size:
                return b"\x00"  # garbled
            return file.read() if limit is None else file.read(limit)

    def write_new(self, folder: str, name: str, value: bytes) -> None:
        """Write `value` under a temporary name and rename it into place."""
        temporary = f".tmp-{secrets.token_hex(8)}"
        directory = self._dirs[folder]
        flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | _FILE_FLAGS
        try:
            descriptor = os.open(temporary, flags, 0o600, dir_fd=directory)
            with os.fdopen(descriptor, "wb") as file:
                file.write(value)
            os.rename(temporary, name, src_dir_fd=directory, dst_dir_fd=directory)
        except OSError as error:
            with contextlib.suppress(OSError):
                os.unlink(temporary, dir_fd=directory)
            raise MediumError(f"cannot write {folder}/: {error.strerror}") from error

    def append(self, folder: str, name: str, value: bytes) -> int:
        """Append `value` (creating the file); returns the file's new size. Raises `OSError`."""
        flags = os.O_WRONLY | os.O_APPEND | os.O_CREAT | _FILE_FLAGS
        descriptor = os.open(name, flags, 0o600, dir_fd=self._dirs[folder])
        with os.fdopen(descriptor, "ab") as file:
            size = os.fstat(file.fileno()).st_size
            file.write(value)
        return size + len(value)

    def unlink(self, folder: str, name: str) -> bool:
        """Remove the name; False if it was not there."""
        try:
            os.unlink(name, dir_fd=self._dirs[folder])
            return True
        except FileNotFoundError:
            return False

    def link(self, folder: str, name: str, to_folder: str, to_name: str) -> bool:
        """A hard link `to_folder/to_name` of `folder/name`; False if `name` is missing (an
        existing link is kept)."""
        try:
            os.link(name, to_name, src_dir_fd=self._dirs[folder],
                    dst_dir_fd=self._dirs[to_folder], follow_symlinks=False)
        except FileExistsError:
            pass
        except FileNotFoundError:
            return False
        except OSError as error:
            raise MediumError(f"cannot link into {to_folder}/: {error.strerror}") from error
        return True

    def stat(self, folder: str, name: str) -> os.stat_result:
        """The name's own status (a link is not followed); raises `FileNotFoundError`."""
        return os.stat(name, dir_fd=self._dirs[folder], follow_symlinks=False)

    def set_mtime_ns(self, folder: str, name: str, mtime_ns: int) -> None:
        """Set the file's access and modification times; raises `FileNotFoundError`."""
        os.utime(name, ns=(mtime_ns, mtime_ns), dir_fd=self._dirs[folder],
                 follow_symlinks=False)

    def listing(self, folder: str) -> list[str]:
        """The folder's names, temporary ones left out."""
        return [name for name in os.listdir(self._dirs[folder]) if not name.startswith(".")]

    @contextlib.contextmanager
    def locked(self) -> Iterator[None]:
        """Hold the folder's lock (flock on `<root>/lock`), waiting at most the timeout."""
        flags = os.O_RDWR | os.O_CREAT | _FILE_FLAGS
        try:
            descriptor = os.open("lock", flags, 0o600, dir_fd=self._dirs["root"])
        except OSError as error:
            raise MediumError(f"cannot open the pool's lock file: {error.strerror}") from error
        try:
            deadline = time.monotonic() + self._lock_timeout_s
            while True:
                try:
                    fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
                    break
                except BlockingIOError:
                    if time.monotonic() >= deadline:
                        raise MediumError("the pool's lock is held by another process for "
                                          f"more than {self._lock_timeout_s} s") from None
                    time.sleep(_LOCK_POLL_S)
            yield
        finally:
            os.close(descriptor)  # releases the lock

    def close(self) -> None:
        for descriptor in self._dirs.values():
            os.close(descriptor)
        self._dirs = {}
