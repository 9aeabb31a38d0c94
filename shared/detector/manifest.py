"""The detector manifest: the deployment facts the code does not carry.

``manifest.yaml`` sits next to the detector module and says who owns it, how many instances to
run and where a new consumer group starts reading. Name, version and inputs are repeated there so
that operators can read them without importing code; the loader checks they agree with the
declaration. Every problem is one line naming the field.

``start`` is where a partition the group has never committed starts: ``latest`` (the default: a
new detector judges what happens from now on), ``earliest`` (everything retained), or a time with
a zone, ``2026-11-22T10:00:00Z``, for a backfill from that moment. It applies once: a restarted
instance continues from the group's committed offsets whatever the manifest says.

``tracing`` (default ``true``) lets the detector's instances make spans for the sampled records
they process (docs/tracing.md). ``false`` turns that off for this detector even where the mesh
exports traces: reading every record's headers to find the sampled ones costs ~1-2 µs a record
(docs/benchmarks.md, 13-17 % of the cheapest reference detector), which a very cheap detector may
not want to pay. Its alerts still carry
their records' trace context on.

``batch_wait_ms`` (default 0) is how long an instance waits to fill a batch once a first record is
in. 0 processes what has arrived at once, so a lone record is alerted on in milliseconds while a
busy instance still gets large batches from its prefetch queue; a detector whose per-batch cost is
high at low rates may trade some latency for bigger batches (at most 10 000 ms).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from typing import Any

from shared.detector.declaration import INPUT_TYPES, check_name
from shared.detector.errors import DeclarationError, ManifestError

MANIFEST_FILE = "manifest.yaml"
START_POSITIONS = ("earliest", "latest")
#: ``Manifest.start`` of a manifest whose ``start`` is a time (then ``start_ms`` is set).
TIMESTAMP = "timestamp"
_REQUIRED = ("name", "version", "inputs", "owner", "replicas")
_OPTIONAL = ("start", "module", "description", "tracing", "batch_wait_ms")
#: The longest ``batch_wait_ms`` a manifest may ask for.
MAX_BATCH_WAIT_MS = 10_000
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


@dataclass(frozen=True)
class Manifest:
    name: str
    version: str
    inputs: tuple[str, ...]
    owner: str
    replicas: int
    #: "earliest", "latest" or TIMESTAMP; the runtime maps the first two to auto.offset.reset.
    start: str = "latest"
    #: With start == TIMESTAMP: epoch milliseconds of the first record to read (by its timestamp).
    start_ms: int | None = None
    #: Python file (without .py) next to the manifest that declares the detector.
    module: str = "detector"
    description: str = ""
    #: Whether instances make spans for sampled records (when the mesh exports traces at all).
    tracing: bool = True
    #: How long an instance waits to fill a batch once a first record is in (0: never waits).
    batch_wait_ms: int = 0
    folder: Path | None = None

    @property
    def start_position(self) -> str:
        """``start`` for people: earliest, latest, or the time in UTC (2026-11-22T10:00:00Z)."""
        if self.start_ms is None:
            return self.start
        moment = _EPOCH + timedelta(milliseconds=self.start_ms)
        spec = "milliseconds" if self.start_ms % 1000 else "seconds"
        return moment.isoformat(timespec=spec).replace("+00:00", "Z")


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
    start, start_ms = parse_start(document.get("start", "latest"), source)
    module = document.get("module", "detector")
    if not isinstance(module, str) or not module.isidentifier():
        raise ManifestError(f"{source}: field `module` must be a Python module name")
    tracing = document.get("tracing", True)
    if not isinstance(tracing, bool):
        raise ManifestError(f"{source}: field `tracing` must be true or false")
    batch_wait_ms = document.get("batch_wait_ms", 0)
    if (
        not isinstance(batch_wait_ms, int)
        or isinstance(batch_wait_ms, bool)
        or not 0 <= batch_wait_ms <= MAX_BATCH_WAIT_MS
    ):
        raise ManifestError(
            f"{source}: field `batch_wait_ms` must be a whole number of milliseconds from 0 to "
            f"{MAX_BATCH_WAIT_MS}"
        )
    return Manifest(
        name=document["name"],
        version=str(version),
        inputs=tuple(inputs),
        owner=owner,
        replicas=replicas,
        start=start,
        start_ms=start_ms,
        module=module,
        description=str(document.get("description") or ""),
        tracing=tracing,
        batch_wait_ms=batch_wait_ms,
    )


def parse_start(value: Any, source: str = MANIFEST_FILE) -> tuple[str, int | None]:
    """``(start, start_ms)`` of a manifest's ``start``: a position name, or a time with a zone.

    YAML turns an unquoted ``2026-11-22T10:00:00Z`` into a datetime and leaves a quoted one a
    string; both are accepted. A time without a zone is refused rather than guessed: the host's
    zone would make the same manifest start at different records on different machines.
    """
    if isinstance(value, str) and value in START_POSITIONS:
        return value, None
    moment: Any = value
    if isinstance(value, str):
        try:
            moment = datetime.fromisoformat(value.strip())
        except ValueError:
            moment = None
    elif isinstance(value, date) and not isinstance(value, datetime):
        moment = datetime(value.year, value.month, value.day)
    if not isinstance(moment, datetime):
        raise ManifestError(
            f"{source}: field `start` must be earliest, latest or a time with a zone such as "
            f"2026-11-22T10:00:00Z, got {value!r}"
        )
    if moment.tzinfo is None or moment.utcoffset() is None:
        raise ManifestError(
            f"{source}: field `start` {moment.isoformat()} has no time zone; add Z (UTC) or an "
            "offset such as +01:00"
        )
    start_ms = (moment - _EPOCH) // timedelta(milliseconds=1)
    if start_ms < 0:
        raise ManifestError(f"{source}: field `start` {moment.isoformat()} is before 1970")
    return TIMESTAMP, start_ms
