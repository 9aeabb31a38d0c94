"""The detector manifest: the deployment facts the code does not carry.

``manifest.yaml`` sits next to the detector module and says who owns it, how many instances to
run and where a new consumer group starts reading. Name, version and inputs are repeated there so
that operators can read them without importing code; the loader checks they agree with the
declaration. Every problem is one line naming the field.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from shared.detector.declaration import INPUT_TYPES, check_name
from shared.detector.errors import DeclarationError, ManifestError

MANIFEST_FILE = "manifest.yaml"
START_POSITIONS = ("earliest", "latest")
_REQUIRED = ("name", "version", "inputs", "owner", "replicas", "start")
_OPTIONAL = ("module", "description")


@dataclass(frozen=True)
class Manifest:
    name: str
    version: str
    inputs: tuple[str, ...]
    owner: str
    replicas: int
    start: str
    #: Python file (without .py) next to the manifest that declares the detector.
    module: str = "detector"
    description: str = ""
    folder: Path | None = None


def load_manifest(folder: Path) -> Manifest:
    """Read and check ``folder/manifest.yaml``."""
    import yaml

    path = folder / MANIFEST_FILE
    try:
        document = yaml.safe_load(path.read_text())
    except FileNotFoundError:
        raise ManifestError(
            f"{path}: no manifest; a detector folder needs {MANIFEST_FILE}"
        ) from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 1}" if mark else ""
        raise ManifestError(f"{path} is not valid YAML{where}: fix the syntax") from None
    manifest = parse_manifest(document, str(path))
    return Manifest(**{**manifest.__dict__, "folder": folder})


def parse_manifest(document: Any, source: str = MANIFEST_FILE) -> Manifest:
    """Check an already-parsed manifest; errors name the field."""
    if not isinstance(document, dict):
        raise ManifestError(f"{source}: expected a mapping of {', '.join(_REQUIRED)}")
    for key in _REQUIRED:
        if key not in document:
            raise ManifestError(f"{source}: missing field `{key}`")
    unknown = sorted(set(document) - set(_REQUIRED) - set(_OPTIONAL))
    if unknown:
        raise ManifestError(
            f"{source}: unknown field `{unknown[0]}`; allowed: {', '.join(_REQUIRED + _OPTIONAL)}"
        )
    try:
        check_name("field `name`:", document["name"])
    except DeclarationError as exc:
        raise ManifestError(f"{source}: {exc}") from None
    version = document["version"]
    if not isinstance(version, str | int | float) or isinstance(version, bool) or not str(version):
        raise ManifestError(f"{source}: field `version` must be a string such as 1.0.0")
    inputs = document["inputs"]
    if isinstance(inputs, str):
        inputs = [inputs]
    if not isinstance(inputs, list) or not inputs:
        raise ManifestError(f"{source}: field `inputs` must be a list of record types")
    for record_type in inputs:
        if record_type not in INPUT_TYPES:
            raise ManifestError(
                f"{source}: field `inputs` names unknown input type {record_type!r}; "
                f"choose from {', '.join(INPUT_TYPES)}"
            )
    owner = document["owner"]
    if not isinstance(owner, str) or not owner.strip():
        raise ManifestError(f"{source}: field `owner` must name a person or team")
    replicas = document["replicas"]
    if not isinstance(replicas, int) or isinstance(replicas, bool) or replicas < 1:
        raise ManifestError(f"{source}: field `replicas` must be a whole number >= 1")
    start = document["start"]
    if start not in START_POSITIONS:
        raise ManifestError(
            f"{source}: field `start` must be one of {', '.join(START_POSITIONS)}, got {start!r}"
        )
    module = document.get("module", "detector")
    if not isinstance(module, str) or not module.isidentifier():
        raise ManifestError(f"{source}: field `module` must be a Python module name")
    return Manifest(
        name=document["name"],
        version=str(version),
        inputs=tuple(inputs),
        owner=owner,
        replicas=replicas,
        start=start,
        module=module,
        description=str(document.get("description") or ""),
    )
