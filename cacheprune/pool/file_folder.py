"""The pool folder's safety checks: ours, private, no symbolic links anywhere.

Another local user must not be able to read the pool, plant or delete entries, or redirect a
write through a link. So the folder (and each subfolder) must be a real directory owned by the
serving user with no group/other permission bits; we create it 0700, and refuse one that is not
with a message saying what to do. Every later file operation goes through directory file
descriptors with O_NOFOLLOW, on names we generated (hex and a fixed alphabet), never on paths
read from the folder.
"""

from __future__ import annotations

import os
import stat

from cacheprune.pool.errors import PoolConfigError

SUBFOLDERS = ("entries", "anchors", "leases", "staging", "quota", "tombstones")
_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC


def default_pool_folder() -> str:
    """This user's own pool folder: `$XDG_RUNTIME_DIR/cacheprune` where the session has one
    (private to the user by definition), else `/dev/shm/cacheprune-<uid>`.

    NOTE: per user, so that another local user who created the folder first cannot stop the
    server from starting (the folder is refused, rightly, and a shared name would be a denial
    of service)."""
    runtime = os.environ.get("XDG_RUNTIME_DIR")
    if runtime and os.path.isabs(runtime) and os.path.isdir(runtime):
        return os.path.join(runtime, "cacheprune")
    return f"/dev/shm/cacheprune-{os.geteuid()}"


def _check_private_dir(path: str, descriptor: int) -> None:
    info = os.fstat(descriptor)
    problems = []
    if info.st_uid != os.geteuid():
        problems.append(f"it is owned by uid {info.st_uid}, not by this user ({os.geteuid()})")
    if stat.S_IMODE(info.st_mode) & 0o077:
        problems.append(f"its mode is {oct(stat.S_IMODE(info.st_mode))}, not 0o700")
    if problems:
        way_out = (f"Use this user's own folder, file://{default_pool_folder()}, or another "
                   "folder this user creates (cacheprune creates a missing one with mode 0700)")
        if info.st_uid == os.geteuid():
            way_out += f", or, as its owner: chmod 700 {path}"
        raise PoolConfigError(
            f"pool folder {path!r} is refused: {'; '.join(problems)}. Another local user could "
            f"read or plant pool entries. {way_out}")


def open_private_dir(path: str, *, parent_fd: int | None = None, name: str | None = None
                     ) -> int:
    """A descriptor of the directory at `path` (or `name` inside `parent_fd`), created 0700 if
    missing; refused (PoolConfigError) if it is a link, not a directory, or not private."""
    where = path if parent_fd is None else name
    assert where is not None
    try:
        os.mkdir(where, 0o700, dir_fd=parent_fd)
        created = True
    except FileExistsError:
        created = False
    except OSError as error:
        raise PoolConfigError(f"cannot create the pool folder {path!r}: {error.strerror}. "
                              "Create its parent or choose another folder") from error
    try:
        descriptor = os.open(where, _DIR_FLAGS, dir_fd=parent_fd)
    except OSError as error:
        info = os.lstat(where, dir_fd=parent_fd)
        kind = "a symbolic link" if stat.S_ISLNK(info.st_mode) else "not a folder"
        raise PoolConfigError(f"pool folder {path!r} is {kind}; cacheprune follows no links "
                              "in its pool folder. Remove it or choose another path") from error
    if created:
        os.fchmod(descriptor, 0o700)  # whatever the umask did
    try:
        _check_private_dir(path, descriptor)
    except PoolConfigError:
        os.close(descriptor)
        raise
    return descriptor


def open_pool_folder(root: str) -> dict[str, int]:
    """Descriptors of the root and its subfolders (keys: "root" and `SUBFOLDERS`)."""
    parent = os.path.dirname(os.path.abspath(root))
    if not os.path.isdir(parent):
        raise PoolConfigError(f"pool folder {root!r}: its parent {parent!r} does not exist")
    descriptors = {"root": open_private_dir(root)}
    try:
        for sub in SUBFOLDERS:
            descriptors[sub] = open_private_dir(os.path.join(root, sub),
                                                parent_fd=descriptors["root"], name=sub)
    except PoolConfigError:
        for descriptor in descriptors.values():
            os.close(descriptor)
        raise
    return descriptors
