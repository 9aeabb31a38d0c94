"""Find a detector by folder or module name, and check it against its manifest.

``python -m services.detector_runtime detectors/velocity`` and
``python -m services.detector_runtime detectors.velocity`` both land here. A folder is loaded from
its files (so ``mesh deploy`` can hot-deploy a folder from anywhere); a module name is imported
normally and its manifest is looked for next to its file.
"""

from __future__ import annotations

import importlib
import importlib.util
import sys
from pathlib import Path
from types import ModuleType

from shared.detector.declaration import Detector
from shared.detector.errors import ManifestError
from shared.detector.manifest import MANIFEST_FILE, Manifest, load_manifest


def load_detector(target: str | Path) -> tuple[Detector, Manifest]:
    """The detector and manifest named by a folder path or a dotted module name."""
    path = Path(target)
    if path.is_dir():
        manifest = load_manifest(path)
        module = _import_file(path / f"{manifest.module}.py", manifest.name)
    elif path.suffix == ".py" and path.is_file():
        manifest = load_manifest(path.parent)
        module = _import_file(path, manifest.name)
    else:
        module = _import_module(str(target))
        folder = Path(module.__file__ or ".").parent
        manifest = load_manifest(folder)
        if hasattr(module, "__path__"):  # a package: the detector is in its `module` file
            module = _import_module(f"{module.__name__}.{manifest.module}")
    detector = find_detector(module)
    check_agreement(detector, manifest)
    return detector, manifest


def find_detector(module: ModuleType) -> Detector:
    found = [v for v in vars(module).values() if isinstance(v, Detector)]
    if len(found) != 1:
        raise ManifestError(
            f"{module.__name__}: expected exactly one @detector(...) function, found {len(found)}"
        )
    return found[0]


def check_agreement(detector: Detector, manifest: Manifest) -> None:
    """Name, version and inputs must be the same in code and manifest."""
    where = f"{manifest.folder / MANIFEST_FILE if manifest.folder else MANIFEST_FILE}"
    for field in ("name", "version", "inputs"):
        declared, listed = getattr(detector, field), getattr(manifest, field)
        if tuple(declared) != tuple(listed) if field == "inputs" else declared != listed:
            raise ManifestError(
                f"{where}: field `{field}` is {listed!r} but the code declares {declared!r}"
            )


def _import_module(name: str) -> ModuleType:
    try:
        return importlib.import_module(name)
    except ModuleNotFoundError as exc:
        raise ManifestError(
            f"{name!r} is neither a detector folder (with {MANIFEST_FILE}) nor an importable "
            f"module: {exc}"
        ) from None


def _import_file(path: Path, name: str) -> ModuleType:
    if not path.is_file():
        raise ManifestError(f"{path}: detector module not found (see `module` in the manifest)")
    module_name = f"mesh_detector_{name}"
    spec = importlib.util.spec_from_file_location(module_name, path)
    if spec is None or spec.loader is None:
        raise ManifestError(f"{path}: cannot be imported as a Python module")
    module = importlib.util.module_from_spec(spec)
    sys.modules[module_name] = module
    spec.loader.exec_module(module)
    return module
