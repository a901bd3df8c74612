"""Native kernels from csrc/, compiled on first use with the system C compiler and cached.

Every kernel has a Python twin in plain torch, used wherever the kernel cannot be built: no C
compiler with OpenMP, no OpenBLAS package, an install without the checkout's csrc/, or
CACHEPRUNE_NATIVE=0 in the environment. Why a kernel is missing is logged once.

The compiled library is cached under cache_root()/native, named by a digest of its source,
the compiler command and the OpenBLAS version, so an edit or an upgrade rebuilds it.
"""

from __future__ import annotations

import ctypes
import functools
import hashlib
import logging
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

from cacheprune.models.sources import cache_root

logger = logging.getLogger(__name__)

CSRC = Path(__file__).resolve().parents[2] / "csrc"
DISABLE_ENV = "CACHEPRUNE_NATIVE"


class NativeBuildError(RuntimeError):
    """A kernel could not be built or loaded; the message says what is missing."""


@functools.cache
def load_kernel(name: str) -> ctypes.CDLL | None:
    """The compiled csrc/<name>.c, or None (with one log line saying why) if it can't be had."""
    if os.environ.get(DISABLE_ENV, "1") == "0":
        logger.info("native kernel %s disabled by %s=0; using its torch twin", name, DISABLE_ENV)
        return None
    try:
        return ctypes.CDLL(str(build(name)))
    except (NativeBuildError, OSError) as err:
        logger.warning("native kernel %s unavailable, using its torch twin: %s", name, err)
        return None


def build(name: str, compiler: str | None = None) -> Path:
    """Compile csrc/<name>.c against OpenBLAS (cached); returns the shared library's path."""
    source = CSRC / f"{name}.c"
    if not source.is_file():
        raise NativeBuildError(f"{source} not found (native kernels are built from a checkout)")
    cc = compiler or os.environ.get("CC", "cc")
    if shutil.which(cc) is None:
        raise NativeBuildError(f"C compiler {cc!r} not found (set CC to one)")
    try:
        import scipy_openblas32 as openblas
    except ImportError as err:
        raise NativeBuildError("the scipy-openblas32 package is not installed") from err
    lib_dir = openblas.get_lib_dir()
    command = [
        cc, "-O2", "-shared", "-fPIC", "-fopenmp", str(source),
        "-I", openblas.get_include_dir(), "-L", lib_dir, f"-l{openblas.get_library()}",
        f"-Wl,-rpath,{lib_dir}", "-Wl,-z,defs",  # every symbol resolved now, not at load
    ]
    key = hashlib.sha256(source.read_bytes())
    key.update(" ".join(command).encode())
    key.update(openblas.__version__.encode())
    target = cache_root() / "native" / f"{name}-{key.hexdigest()[:16]}.so"
    if target.is_file():
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    # NOTE: compiled beside the target and renamed into place, so that a process that loads
    # the library never sees a half-written file.
    fd, partial = tempfile.mkstemp(suffix=".so", dir=target.parent)
    os.close(fd)
    try:
        done = subprocess.run([*command, "-o", partial], capture_output=True, text=True)
        if done.returncode != 0:
            tail = done.stderr.strip().splitlines()[-3:]
            raise NativeBuildError(f"{cc} failed on {source.name}: " + " | ".join(tail))
        os.replace(partial, target)
    finally:
        if os.path.exists(partial):
            os.unlink(partial)
    return target
