"""Build and run the Kafka Streams peer (bench/kstreams): the detectors' rules as Kafka Streams.

The peer is a small Java application built by Maven from Maven Central, like every jar here
(shared/jar_cache.py): into ``MESH_CACHE/kstreams``, from a copy of bench/kstreams made in a
staging folder that is renamed into place only once Maven succeeded, so neither an interrupted
build nor Maven's ``target/`` is ever left behind. The folder's stamp holds the hash of the POM
and the Java sources that were built: a change to either rebuilds, anything else reuses it.

A run is one ``java`` process that reads a topic's first COUNT records and prints one JSON line of
figures. Why it decodes and windows the way it does is said in its Java sources.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import tempfile
from pathlib import Path
from typing import Any

from shared.avro.catalogue import load_catalogue
from shared.errors import MeshError
from shared.file_digest import files_digest
from shared.jar_cache import MAVEN_SETTINGS, Bundle, explain_maven_failure, require_tools
from shared.kafka.security import client_security
from shared.settings import PROJECT_ROOT, Settings

SOURCES = PROJECT_ROOT / "bench" / "kstreams"
THRESHOLDS = PROJECT_ROOT / "detectors" / "large_amount" / "thresholds.yaml"
MAIN_CLASS = "mesh.bench.StreamsPeer"
MODES = ("large_amount", "tumbling_count", "hopping_count")
JAR = "streams-peer.jar"
DEPS = "deps"
STAMP = ".built-from"
#: A fixed heap, so the peer's memory does not follow the machine's size (the JVM's default is a
#: quarter of the RAM) and its peak RSS compares between machines; far above what a 200 000-record
#: backlog needs (RocksDB keeps its data off the heap anyway).
HEAP = "-Xmx1g"
#: How many lines of the peer's stderr an error quotes.
STDERR_LINES = 10
#: The figures every result line holds.
RESULT_KEYS = ("records", "seconds", "alerts", "mode", "rss_mb")


class StreamsPeerError(MeshError):
    """The Kafka Streams peer cannot be built or did not finish its run."""


def cache_folder(settings: Settings) -> Path:
    """Next to the jar cache's bundles, not in it: a build, not one of the fetched bundles."""
    return settings.jars_dir.parent / "kstreams"


def source_files(root: Path = SOURCES) -> list[Path]:
    """What the build depends on: the POM and everything under src/, in a stable order."""
    return [root / "pom.xml", *sorted(p for p in (root / "src").rglob("*") if p.is_file())]


def source_hash(root: Path = SOURCES) -> str:
    """The hash of what a build was made from (a rename counts too)."""
    return files_digest(root, source_files(root))


def is_fresh(settings: Settings, sources: Path = SOURCES) -> bool:
    """True when the cached build was made from the current sources and is complete."""
    folder = cache_folder(settings)
    stamp = folder / STAMP
    return (
        stamp.is_file()
        and stamp.read_text().strip() == source_hash(sources)
        and (folder / JAR).is_file()
        and any((folder / DEPS).glob("*.jar"))
    )


def build(settings: Settings, *, force: bool = False, sources: Path = SOURCES) -> Path:
    """The built peer's folder (its jar, and its dependencies in ``deps/``), built if stale."""
    folder = cache_folder(settings)
    if not force and is_fresh(settings, sources):
        return folder
    require_tools()
    folder.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=folder.parent, prefix=".kstreams-") as tmp:
        copy = Path(tmp) / "sources"
        shutil.copytree(sources, copy, ignore=shutil.ignore_patterns("target"))
        result = subprocess.run(maven_command(copy), capture_output=True, text=True, check=False)
        if result.returncode != 0:
            output = result.stdout + result.stderr
            raise StreamsPeerError(explain_build_failure(output, copy, sources))
        staging = Path(tmp) / "built"
        staging.mkdir()
        (copy / "target" / JAR).rename(staging / JAR)
        (copy / "target" / DEPS).rename(staging / DEPS)
        (staging / STAMP).write_text(source_hash(copy) + "\n")  # what was built, not what is now
        if folder.exists():
            shutil.rmtree(folder)
        staging.rename(folder)
    return folder


def maven_command(project: Path) -> list[str]:
    """``package`` also copies the runtime dependencies (bound in the POM); Central only."""
    return ["mvn", "-B", "-q", "-s", str(MAVEN_SETTINGS), "-f", str(project / "pom.xml"), "package"]


def explain_build_failure(output: str, copy: Path, sources: Path = SOURCES) -> str:
    """One line: Maven's first real error, pointing into the sources rather than their copy."""
    readable = output.replace(str(copy), _shown(sources))
    # javac's errors come under a "COMPILATION ERROR :" banner, which says nothing by itself.
    readable = "\n".join(line for line in readable.splitlines() if "COMPILATION ERROR" not in line)
    why = explain_maven_failure(Bundle("Kafka Streams peer", copy / "pom.xml"), readable)
    return f"cannot build the Kafka Streams peer ({_shown(sources)}): {why}"


def _shown(path: Path) -> str:
    """``bench/kstreams`` for the project's own sources; other paths (tests) as they are."""
    return str(path.relative_to(PROJECT_ROOT)) if path.is_relative_to(PROJECT_ROOT) else str(path)


def schema_file(settings: Settings) -> Path:
    """The latest transaction schema: the one the feed's records are written with."""
    return load_catalogue(settings.schemas_dir).get("transaction").path


def classpath(folder: Path) -> str:
    return f"{folder / JAR}:{folder / DEPS / '*'}"


def command(
    folder: Path,
    settings: Settings,
    mode: str,
    input_topic: str,
    output_topic: str,
    count: int,
) -> list[str]:
    """The peer's command line (the thresholds are passed in every mode; only one reads them)."""
    return [
        "java", HEAP, "-cp", classpath(folder), MAIN_CLASS,
        mode, settings.bootstrap_servers, input_topic, output_topic, str(count),
        str(schema_file(settings)), str(THRESHOLDS),
    ]  # fmt: skip


def run(
    settings: Settings,
    mode: str,
    input_topic: str,
    output_topic: str,
    count: int,
    timeout_s: float = 600,
    application_id: str | None = None,
) -> dict[str, Any]:
    """Build if needed, run the peer over ``count`` records of ``input_topic``; its figures.

    ``application_id`` names the Kafka Streams application instead of a new one per run: a
    second run with the same name restores the first one's state from its changelog."""
    if mode not in MODES:
        raise StreamsPeerError(f"unknown Kafka Streams peer mode {mode!r}; known: {MODES}")
    if client_security(settings):
        raise StreamsPeerError(
            "the Kafka Streams peer connects without a login: run the benchmark against a "
            "plaintext cluster (unset MESH_BROKER_SECURE and MESH_KAFKA_USERNAME)"
        )
    folder = build(settings)
    args = command(folder, settings, mode, input_topic, output_topic, count)
    if application_id is not None:
        args.insert(1, f"-Dmesh.bench.applicationId={application_id}")
    returncode, stdout, stderr = _run_process(args, timeout_s)
    if returncode is None:
        raise StreamsPeerError(
            f"the Kafka Streams peer ({mode}) did not finish within {timeout_s:g} s"
            + _quoted(stderr)
        )
    if returncode != 0:
        raise StreamsPeerError(
            f"the Kafka Streams peer ({mode}) failed with exit status {returncode}"
            + _quoted(stderr)
        )
    return parse_result(stdout, stderr)


def _run_process(args: list[str], timeout_s: float) -> tuple[int | None, str, str]:
    """(exit status or None on timeout, stdout, stderr). A peer past its time is asked to stop
    (SIGTERM: its shutdown hook removes its state folder) before it is killed."""
    with subprocess.Popen(
        args, cwd=PROJECT_ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    ) as process:
        try:
            stdout, stderr = process.communicate(timeout=timeout_s)
            return process.returncode, stdout, stderr
        except subprocess.TimeoutExpired:
            process.terminate()
            try:
                stdout, stderr = process.communicate(timeout=30)
            except subprocess.TimeoutExpired:
                process.kill()
                stdout, stderr = process.communicate()
            return None, stdout, stderr


def parse_result(stdout: str, stderr: str = "") -> dict[str, Any]:
    """The peer's figures: the last stdout line that is a JSON object with every result key."""
    for line in reversed(stdout.splitlines()):
        try:
            figures = json.loads(line)
        except ValueError:
            continue
        if isinstance(figures, dict) and all(k in figures for k in RESULT_KEYS):
            return figures
    raise StreamsPeerError("the Kafka Streams peer printed no result line" + _quoted(stderr))


def _quoted(stderr: str) -> str:
    """The end of the peer's stderr, on lines of their own after the error's own line."""
    lines = [line for line in stderr.strip().splitlines() if line.strip()][-STDERR_LINES:]
    return (":\n  " + "\n  ".join(lines)) if lines else " (nothing on stderr)"
