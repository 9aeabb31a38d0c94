"""Class data sharing for the mesh's own JVMs: load a cold JVM's classes from an archive.

Why: a cold JVM spends its first tens of seconds loading, verifying and linking tens of thousands
of classes (Spark's and Kafka's), and on a 2-core machine that start-up CPU is taken from every
other service. With a dynamic AppCDS archive (JDK 13+) those classes are mapped in ready-made:
measured on this machine, ingest routed its first record after 30 s instead of 44-47 s, and the
metrics aggregator used 26.7 s of CPU in its first 2 minutes instead of 36.3 s (issue 29,
docs/benchmarks.md, "The first minutes").

How: the first JVM of a kind runs with ``-XX:ArchiveClassesAtExit``, which writes the classes it
loaded when it exits cleanly; later JVMs of that kind run with ``-XX:SharedArchiveFile``. The
JVM writes to a name of its own (``<archive>.<starter pid>.<token>.pending``); on a clean stop
the process that started it waits for the JVM's exit and renames the file into place
(:meth:`ClassArchive.keep`, :func:`shared.spark_session.stop_spark`), and otherwise (a failure,
a kill, the broker's starter long gone) the next start of the kind does. So two JVMs writing at
once, or one killed mid-write, never leave a half archive under the final name; a kind tries
this ten times. The name is keyed by the Java runtime, the kind and the class path (with each
jar's size and time), so a new JDK or a changed jar starts a new archive; a JVM that still finds
it unusable runs without it (``-Xshare:auto``, the default). An archive is an optimisation:
anything in the way (no ``java``, a cache folder that takes no writes) means none, never a
failed start.

The archives live in the jar cache's folder (``MESH_CACHE``), shared by every ``MESH_HOME``;
``MESH_JVM_CLASS_ARCHIVE=true`` turns it on (off by default: see :mod:`shared.settings`).
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import shutil
import uuid
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from shared.pids import alive
from shared.settings import Settings

#: What a JVM's dump at exit prints on stdout would fill a service's log (a line per class it
#: cannot archive); real failures to map an archive still show (``cds`` warnings stay on).
QUIET_DUMP = "-Xlog:cds*=off"

PENDING = ".pending"

#: The first bytes of a complete dynamic archive (HotSpot's ``CDS_DYNAMIC_ARCHIVE_MAGIC``, little
#: endian). The JVM writes the header last, after every region, so a file cut short by a kill
#: starts with zeros instead.
DYNAMIC_ARCHIVE_MAGIC = bytes.fromhex("a8ab0bf0")

#: Starts of a kind that may try to write its archive. A JVM that never stops cleanly (one killed
#: every time) would otherwise pay the slower writing start for ever; a few killed ones before the
#: first clean stop (a fault test's, say) must not use them all up (three did, in `make test`).
WRITE_ATTEMPTS = 10


@dataclass(frozen=True)
class ClassArchive:
    """The archive of one kind of JVM: the options to start it with, and how to keep what it
    wrote."""

    final: Path
    pending: Path | None  #: where this JVM writes at exit; None: it reads ``final``, or neither

    @property
    def java_options(self) -> list[str]:
        if self.final.exists():
            return [f"-XX:SharedArchiveFile={self.final}"]
        if self.pending is not None:
            return [f"-XX:ArchiveClassesAtExit={self.pending}", QUIET_DUMP]
        return []

    def keep(self) -> bool:
        """Move what this JVM wrote into place once it has exited; True if it was kept."""
        return self.pending is not None and _adopt(self.pending, self.final)


def class_archive(
    settings: Settings, kind: str, classpath: Iterable[str | Path]
) -> ClassArchive | None:
    """The archive for a JVM of ``kind`` started with ``classpath`` (in order), or None when
    archives are off or no ``java`` is on the path."""
    if not settings.jvm_class_archive:
        return None
    java = shutil.which("java")
    if java is None:
        return None
    try:
        return _choose(settings.cache / "jvm", kind, Path(java).resolve(), classpath)
    except OSError:  # the cache takes no writes, a jar vanished meanwhile: start without one
        return None


def _choose(folder: Path, kind: str, java: Path, classpath: Iterable[str | Path]) -> ClassArchive:
    """Read the archive of ``kind`` if there is one (keeping what killed starters left), else
    write one, while tries are left."""
    folder.mkdir(parents=True, exist_ok=True)
    final = folder / f"{kind}-{_key(java, classpath)}.jsa"
    for pending in folder.glob(f"{final.name}.*{PENDING}"):
        if not _writer_alive(pending):  # its starter was killed before it could keep it
            _adopt(pending, final)
    if final.exists() or not _count_attempt(final):
        return ClassArchive(final, None)
    # Its starter's pid (whether someone can still keep it) and a token of its own: a process
    # that starts several JVMs of a kind (a test session's brokers) gives each its own file.
    name = f"{final.name}.{os.getpid()}.{uuid.uuid4().hex[:8]}{PENDING}"
    return ClassArchive(final, final.with_name(name))


def complete(archive: Path) -> bool:
    """The JVM finished writing ``archive`` (its header, written last, is there)."""
    try:
        with archive.open("rb") as file:
            return file.read(len(DYNAMIC_ARCHIVE_MAGIC)) == DYNAMIC_ARCHIVE_MAGIC
    except OSError:
        return False


def _adopt(pending: Path, final: Path) -> bool:
    """A complete ``pending`` becomes ``final`` unless one is there already; the rest is
    removed."""
    if complete(pending) and not final.exists():
        os.replace(pending, final)
        return True
    pending.unlink(missing_ok=True)
    return False


def _count_attempt(final: Path) -> bool:
    """One more start of this kind tries to write the archive; False once the tries are used."""
    attempts = final.with_name(final.name + ".attempts")
    try:
        made = int(attempts.read_text() or 0)
    except (OSError, ValueError):
        made = 0
    if made >= WRITE_ATTEMPTS:
        return False
    attempts.write_text(str(made + 1))
    return True


def _writer_alive(pending: Path) -> bool:
    """The process named in ``pending`` (the one that started its JVM) still runs."""
    pid = pending.name[: -len(PENDING)].rsplit(".", 2)[-2]
    return pid.isdigit() and alive(int(pid))


def _key(java: Path, classpath: Iterable[str | Path]) -> str:
    """What the archive is only valid for: the runtime (its ``release`` file names the exact
    version) and every class path entry with its size and time (a ``dir/*`` entry is expanded
    as the JVM expands it)."""
    digest = hashlib.sha256(str(java).encode())
    release = java.parent.parent / "release"
    with contextlib.suppress(OSError):
        digest.update(release.read_bytes())
    for entry in classpath:
        for jar in _expand(Path(entry)):
            stat = jar.stat()
            digest.update(f"{jar}\0{stat.st_size}\0{stat.st_mtime_ns}\n".encode())
    return digest.hexdigest()[:16]


def _expand(entry: Path) -> list[Path]:
    if entry.name == "*":
        return sorted(entry.parent.glob("*.jar"))
    return [entry] if entry.exists() else []
