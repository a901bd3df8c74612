"""Reading YAML config files into pydantic models, with errors that name file, rule and field."""

from __future__ import annotations

from importlib import resources
from pathlib import Path
from typing import Any, TypeVar

import yaml
from pydantic import BaseModel, ValidationError

from cacheprune.detectors.base import DetectorConfigError

ModelT = TypeVar("ModelT", bound=BaseModel)


def shipped_file(file_name: str) -> Path:
    """A file of the rules folder shipped with cacheprune."""
    return Path(str(resources.files("cacheprune.detectors") / "rules" / file_name))


def load_spec(model: type[ModelT], path: str | Path | None, shipped_name: str) -> ModelT:
    """Read and validate a YAML file; None reads the shipped one named `shipped_name`."""
    resolved = shipped_file(shipped_name) if path is None else Path(path)
    return validate(model, read_yaml(resolved), str(resolved))


def read_yaml(path: Path) -> Any:
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise DetectorConfigError(f"{path}: cannot read the file ({exc.strerror})") from exc
    return parse_yaml(text, str(path))


def parse_yaml(text: str, source: str) -> Any:
    try:
        return yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" (line {mark.line + 1}, column {mark.column + 1})" if mark is not None else ""
        problem = getattr(exc, "problem", None) or str(exc)
        raise DetectorConfigError(f"{source}: malformed YAML{where}: {problem}") from exc


def validate(model: type[ModelT], data: Any, source: str) -> ModelT:
    """Validate `data` as `model`; on failure, one line per problem naming its place."""
    if not isinstance(data, dict):
        raise DetectorConfigError(f"{source}: expected a mapping at the top level")
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        lines = [f"{source}: {_place(data, err['loc'])}: {err['msg']}" for err in exc.errors()]
        raise DetectorConfigError("\n".join(lines)) from exc


def _place(data: Any, loc: tuple[int | str, ...]) -> str:
    """'rules[2] (rule 'email') -> patterns[0] -> regex' from a pydantic error location."""
    parts: list[str] = []
    node = data
    for key in loc:
        if isinstance(key, int):
            label = f"[{key}]"
            item = node[key] if isinstance(node, list) and key < len(node) else None
            if isinstance(item, dict) and isinstance(item.get("name"), str):
                label += f" ('{item['name']}')"
            if parts:
                parts[-1] += label
            else:
                parts.append(label)
            node = item
        else:
            parts.append(str(key))
            node = node.get(key) if isinstance(node, dict) else None
    return " -> ".join(parts) if parts else "(top level)"
