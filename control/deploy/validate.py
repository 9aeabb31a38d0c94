"""Check a detector folder before anything runs it: manifest, import, input schemas, dry run.

``mesh deploy`` and ``mesh rollout`` call :func:`validate`, which runs this module as a throwaway
process (``python -m control.deploy.validate FOLDER``): the author's code is imported there,
not in the CLI, so an import that hangs hits a timeout, and whatever the module does at import
time stays out of the mesh. The dry run feeds generated records (planted fraud included) through
the test harness, the same code path the runtime uses, and every alert is encoded with the
``alert`` schema. The first problem comes back as one line naming the file, line or record.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import traceback
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from control.deploy.errors import DeployRefused
from shared.detector import INPUT_TYPES, load_detector, load_manifest, run
from shared.detector.harness import FIXED_CLOCK_MS
from shared.errors import MeshError
from tools.loadgen import StreamConfig

if TYPE_CHECKING:
    from shared.detector import Detector, Manifest

#: Generated records fed through the dry run.
DRY_RUN_RECORDS = 3000
#: Seconds the whole check may take (import and dry run included).
VALIDATE_TIMEOUT_S = 120.0


@dataclass(frozen=True)
class Validated:
    name: str
    version: str
    inputs: tuple[str, ...]
    replicas: int
    start: str
    #: Whether the manifest has an ``autoscale:`` block.
    autoscaled: bool
    dry_run_records: int
    dry_run_alerts: int


def validate(folder: Path, timeout: float = VALIDATE_TIMEOUT_S) -> Validated:
    """The folder's detector if it passes every check; DeployRefused with the first problem."""
    if not folder.is_dir():
        raise DeployRefused(f"{folder} is not a folder; give a detector folder with manifest.yaml")
    try:
        done = subprocess.run(
            [sys.executable, "-m", "control.deploy.validate", str(folder)],
            capture_output=True,
            text=True,
            timeout=timeout,
            # No __pycache__ in the author's folder: a stale one (an edit within the same second,
            # same size) would make the check import yesterday's code.
            env={**os.environ, "PYTHONDONTWRITEBYTECODE": "1"},
        )
    except subprocess.TimeoutExpired:
        raise DeployRefused(
            f"{folder}: importing and dry-running the detector took over {timeout:.0f} s; "
            "does its module do slow work at import time?"
        ) from None
    lines = done.stdout.strip().splitlines()
    try:
        verdict = json.loads(lines[-1])
    except (IndexError, ValueError):
        tail = (done.stderr.strip().splitlines() or ["no output"])[-1]
        raise DeployRefused(f"{folder}: the check itself failed: {tail}") from None
    if not verdict.get("ok"):
        raise DeployRefused(verdict["error"])
    return Validated(
        name=verdict["name"],
        version=verdict["version"],
        inputs=tuple(verdict["inputs"]),
        replicas=verdict["replicas"],
        start=verdict["start"],
        autoscaled=bool(verdict.get("autoscaled")),
        dry_run_records=verdict["records"],
        dry_run_alerts=verdict["alerts"],
    )


def check_folder(folder: Path) -> dict[str, Any]:
    """Run every check in this process; the verdict as a JSON-able dict."""

    try:
        detector, manifest = _load(folder)
        _check_input_schemas(detector.inputs)
        records, alerts = _dry_run(detector)
    except (MeshError, _Refused) as exc:
        return {"ok": False, "error": str(exc)}
    return {
        "ok": True,
        "name": manifest.name,
        "version": manifest.version,
        "inputs": list(manifest.inputs),
        "replicas": manifest.replicas,
        "start": manifest.start_position,
        "autoscaled": manifest.autoscale is not None,
        "records": records,
        "alerts": alerts,
    }


class _Refused(Exception):
    pass


def _load(folder: Path) -> tuple[Detector, Manifest]:
    manifest = load_manifest(folder)  # a manifest problem is reported before any import
    module_file = folder / f"{manifest.module}.py"
    try:
        return load_detector(folder)
    except MeshError:
        raise
    except SyntaxError as exc:
        raise _Refused(
            f"{exc.filename or module_file}:{exc.lineno}: syntax error: {exc.msg}"
        ) from None
    except Exception as exc:  # the author's import-time code failed
        where = _where(exc, folder, module_file)
        raise _Refused(f"importing {where} failed: {_one_line(exc)}") from None


def _check_input_schemas(inputs: tuple[str, ...]) -> None:
    from shared.avro import load_catalogue

    catalogue = load_catalogue()
    for record_type in inputs:
        try:
            catalogue.get(INPUT_TYPES[record_type])
        except Exception:
            raise _Refused(
                f"input type {record_type!r} has no schema {INPUT_TYPES[record_type]!r} "
                "under schemas/"
            ) from None


def _dry_run(detector: Any) -> tuple[int, int]:
    from tools.loadgen.avro_feed import valid_records

    config = StreamConfig(
        start_time_ms=FIXED_CLOCK_MS - 3_600_000,
        count=DRY_RUN_RECORDS,
        seed=7,
        invalid_share=0.0,
        fraud_share=0.02,
    )
    feed = [
        (r.record_type, r.record) for r in valid_records(config) if r.record_type in detector.inputs
    ]
    try:
        result = run(detector, feed, partitions=4, batch_size=500)
    except Exception as exc:  # an alert that does not fit the alert schema
        raise _Refused(f"dry run: {_one_line(exc)}") from None
    if result.failures:
        first = result.failures[0]
        raise _Refused(
            f"dry run: {len(result.failures)} of {len(feed)} records failed; the first, "
            f"{first.record_type} record {first.index} ({_fields(first.record)}): "
            f"{_one_line(first.error)}"
        )
    return len(feed), len(result.alerts)


def _where(exc: BaseException, folder: Path, fallback: Path) -> str:
    """``file:line`` of the deepest traceback frame inside the detector folder."""
    inside = [
        frame
        for frame in traceback.extract_tb(exc.__traceback__)
        if Path(frame.filename).resolve().is_relative_to(folder.resolve())
    ]
    return f"{inside[-1].filename}:{inside[-1].lineno}" if inside else str(fallback)


def _one_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0][:300]}" if text else type(exc).__name__


def _fields(record: dict[str, Any]) -> str:
    return ", ".join(f"{k}={record[k]!r}" for k in ("customer_id",) if k in record)


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1:
        print("usage: python -m control.deploy.validate FOLDER", file=sys.stderr)
        return 2
    print(json.dumps(check_folder(Path(args[0]))))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
