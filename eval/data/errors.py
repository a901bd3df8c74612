"""Errors of the dataset loaders and the downloader's manifest."""

from __future__ import annotations


class DatasetError(ValueError):
    """A data file is missing or malformed; the message names the file, the line and the field."""
