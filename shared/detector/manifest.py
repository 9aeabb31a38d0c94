"""The detector manifest: the deployment facts the code does not carry.

``manifest.yaml`` sits next to the detector module and says who owns it, how many instances to
run and where a new consumer group starts reading. Name, version and inputs are repeated there so
that operators can read them without importing code; the loader checks they agree with the
declaration. The fields, their types, defaults and meaning are the :class:`Manifest` dataclass
below (``mesh settings --manifest`` prints them); :mod:`shared.typed_document` reads a file into
it, so every problem is one line naming the field.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from typing import Any

from shared.detector.autoscale import AutoscalePolicy, read_autoscale
from shared.detector.declaration import INPUT_TYPES, check_name
from shared.detector.errors import DeclarationError, ManifestError
from shared.typed_document import checked, read_document

MANIFEST_FILE = "manifest.yaml"
START_POSITIONS = ("earliest", "latest")
#: ``Manifest.start`` of a manifest whose ``start`` is a time (then ``start_ms`` is set).
TIMESTAMP = "timestamp"
#: The longest ``batch_wait_ms`` a manifest may ask for.
MAX_BATCH_WAIT_MS = 10_000
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
#: A field that is not a key of the file.
_NOT_READ = {"variable": False}


def _name(value: Any, where: str) -> str:
    try:
        check_name("", value)
    except DeclarationError as exc:
        raise ManifestError(f"{where}{exc}") from None
    return str(value)


def _version(value: Any, where: str) -> str:
    if not isinstance(value, str | int | float) or isinstance(value, bool) or not str(value):
        raise ManifestError(f"{where} must be a string such as 1.0.0")
    return str(value)


def _inputs(value: Any, where: str) -> tuple[str, ...]:
    inputs = [value] if isinstance(value, str) else value
    if not isinstance(inputs, list) or not inputs:
        raise ManifestError(f"{where} must be a list of record types")
    for record_type in inputs:
        if record_type not in INPUT_TYPES:
            raise ManifestError(
                f"{where} names unknown input type {record_type!r}; "
                f"choose from {', '.join(INPUT_TYPES)}"
            )
    return tuple(inputs)


def _module(value: Any, where: str) -> str:
    if not isinstance(value, str) or not value.isidentifier():
        raise ManifestError(f"{where} must be a Python module name")
    return value


def _start(value: Any, where: str) -> tuple[str, int | None]:
    """``(start, start_ms)``: parse_manifest splits them into the two fields."""
    return parse_start(value, where)


def _description(value: Any, where: str) -> str:
    return str(value or "")


@dataclass(frozen=True)
class Manifest:
    """A detector folder's ``manifest.yaml``, checked."""

    #: The detector's name (lower case letters, digits and _, from a letter); the code's must agree.
    name: str = field(metadata=checked(_name))
    #: Its version, such as 1.0.0 (the code's must agree); a rollout moves to a new one.
    version: str = field(metadata=checked(_version))
    #: The record type(s) it reads: one name or a list (transactions, logins, ...).
    inputs: tuple[str, ...] = field(metadata=checked(_inputs))
    #: The person or team who answers for its alerts.
    owner: str = field(metadata={"expect": "name a person or team"})
    #: How many instances to run (each takes a share of the input's partitions).
    replicas: int = field(metadata={"minimum": 1})
    #: Where a new consumer group starts: latest (from now on), earliest (everything retained)
    #: or a time with a zone, 2026-11-22T10:00:00Z (a backfill from then). It applies once: a
    #: restarted instance continues from the group's committed offsets whatever this says.
    start: str = field(default="latest", metadata=checked(_start))
    #: The Python file (without .py) next to the manifest that declares the detector.
    module: str = field(default="detector", metadata=checked(_module))
    #: What it looks for, for people.
    description: str = field(default="", metadata=checked(_description))
    #: Whether its instances make spans for sampled records when the mesh exports traces
    #: (docs/tracing.md). false saves reading every record's headers, ~1-2 us a record (13-17 %
    #: of the cheapest reference detector, docs/benchmarks.md); its alerts still carry their
    #: records' trace context on.
    tracing: bool = True
    #: How long an instance waits to fill a batch once a first record is in. 0 processes what
    #: has arrived at once (a lone record is alerted on in milliseconds, a busy instance still
    #: gets large batches); a detector whose per-batch cost is high at low rates may trade some
    #: latency for bigger batches.
    batch_wait_ms: int = field(
        default=0, metadata={"minimum": 0, "maximum": MAX_BATCH_WAIT_MS, "unit": "milliseconds"}
    )
    #: Let the mesh choose the replica count from the consumer group's lag: ``{min: 1, max: 6,
    #: lag_per_replica: 5000}`` (``mesh settings --manifest`` shows its fields; docs/autoscale.md).
    #: ``replicas`` is then the count it starts with, between min and max.
    autoscale: AutoscalePolicy | None = field(default=None, metadata=checked(read_autoscale))
    #: With a time as ``start``: epoch milliseconds of the first record to read (by its
    #: timestamp), and ``start`` is TIMESTAMP.
    start_ms: int | None = field(default=None, metadata=_NOT_READ)
    #: The folder the manifest was read from.
    folder: Path | None = field(default=None, metadata=_NOT_READ)

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
    # yaml (13 ms) only when a manifest is read: `mesh` starts without it (docs/layout.md).
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
    return replace(parse_manifest(document, str(path)), folder=folder)


def parse_manifest(document: Any, source: str = MANIFEST_FILE) -> Manifest:
    """Check an already-parsed manifest; errors name the field."""
    values = read_document(Manifest, document, source, ManifestError)
    start, start_ms = values.pop("start", ("latest", None))
    manifest = Manifest(**values, start=start, start_ms=start_ms)
    bounds = manifest.autoscale
    if bounds and not bounds.min <= manifest.replicas <= bounds.max:
        raise ManifestError(
            f"{source}: field `replicas` ({manifest.replicas}) must be between autoscale's min "
            f"and max ({bounds.min} to {bounds.max}): it is the count the detector starts with"
        )
    return manifest


def parse_start(value: Any, where: str) -> tuple[str, int | None]:
    """``(start, start_ms)`` of a manifest's ``start``: a position name, or a time with a zone.
    ``where`` (``"<file>: field `start`"``) begins each message.

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
            f"{where} must be earliest, latest or a time with a zone such as "
            f"2026-11-22T10:00:00Z, got {value!r}"
        )
    if moment.tzinfo is None or moment.utcoffset() is None:
        raise ManifestError(
            f"{where} {moment.isoformat()} has no time zone; add Z (UTC) or an "
            "offset such as +01:00"
        )
    start_ms = (moment - _EPOCH) // timedelta(milliseconds=1)
    if start_ms < 0:
        raise ManifestError(f"{where} {moment.isoformat()} is before 1970")
    return TIMESTAMP, start_ms
