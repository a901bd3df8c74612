"""Peak resident memory of this process, resettable between measurements (Linux)."""

from __future__ import annotations

from pathlib import Path

_STATUS = Path("/proc/self/status")
_CLEAR_REFS = Path("/proc/self/clear_refs")


def peak_rss_bytes() -> int | None:
    """VmHWM (high-water mark of resident memory), or None where /proc is not available."""
    if not _STATUS.exists():
        return None
    for line in _STATUS.read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) * 1024
    return None


def reset_peak_rss() -> bool:
    """Reset the high-water mark to the current RSS (writing 5 to clear_refs); False if the
    kernel does not allow it, in which case peaks are cumulative since process start."""
    try:
        _CLEAR_REFS.write_text("5")
    except OSError:
        return False
    return True
