"""The git-ignored jar cache: Kafka's broker, Spark's connectors and the Avro Java library.

Every jar comes from Maven Central through Maven, driven by the POMs in infra/maven (the settings
file there routes every repository to Central). A bundle is fetched into a temporary folder and
renamed into place only when Maven succeeded, with a stamp recording the POM's hash, so an
interrupted fetch never leaves a half-filled cache and a changed POM triggers a new fetch.
"""

from __future__ import annotations

import hashlib
import re
import shutil
import subprocess
import sys
import tempfile
import zipfile
from dataclasses import dataclass
from pathlib import Path

from shared.errors import MeshError
from shared.settings import PROJECT_ROOT, Settings

MAVEN_DIR = PROJECT_ROOT / "infra" / "maven"
MAVEN_SETTINGS = MAVEN_DIR / "settings.xml"
STAMP = ".fetched-from"


class JarCacheError(MeshError):
    """The jar cache is missing, corrupt, or cannot be filled."""


@dataclass(frozen=True)
class Bundle:
    """A set of jars described by one POM, copied with their runtime dependencies."""

    name: str
    pom: Path

    def folder(self, settings: Settings) -> Path:
        return settings.jars_dir / self.name


BUNDLES: dict[str, Bundle] = {
    "kafka": Bundle("kafka", MAVEN_DIR / "kafka-broker.pom.xml"),
    "spark": Bundle("spark", MAVEN_DIR / "spark-connectors.pom.xml"),
    "avro-java": Bundle("avro-java", MAVEN_DIR / "avro-tools.pom.xml"),
    "delta": Bundle("delta", MAVEN_DIR / "delta.pom.xml"),
}


def bundle(name: str) -> Bundle:
    try:
        return BUNDLES[name]
    except KeyError:
        raise JarCacheError(f"unknown jar bundle {name!r}; known: {', '.join(BUNDLES)}") from None


def _pom_hash(pom: Path) -> str:
    return hashlib.sha256(pom.read_bytes()).hexdigest()


def is_fresh(b: Bundle, settings: Settings) -> bool:
    """True when the bundle was fetched from the current POM and every jar opens as a zip."""
    stamp = b.folder(settings) / STAMP
    if not stamp.exists() or stamp.read_text().strip() != _pom_hash(b.pom):
        return False
    try:
        verify(b, settings)
    except JarCacheError:
        return False
    return True


def verify(b: Bundle, settings: Settings) -> list[Path]:
    """The bundle's jars, after checking each one's zip directory reads; else a clear error."""
    folder = b.folder(settings)
    jars = sorted(folder.glob("*.jar"))
    if not jars:
        raise JarCacheError(f"no {b.name} jars in {folder}: run `make jars` to fetch them")
    for jar in jars:
        try:
            with zipfile.ZipFile(jar) as archive:
                archive.namelist()
        except (zipfile.BadZipFile, OSError) as exc:
            raise JarCacheError(
                f"corrupt jar {jar} ({exc}): delete {folder} and run `make jars` again"
            ) from None
    return jars


def require_tools() -> None:
    """Java and Maven must be on PATH; say how to get them if not."""
    for tool, package in (("java", "openjdk-17-jre-headless"), ("mvn", "maven")):
        if shutil.which(tool) is None:
            raise JarCacheError(
                f"`{tool}` not found on PATH: install it (as root: apt-get install {package})"
            )


def fetch(b: Bundle, settings: Settings, *, force: bool = False) -> Path:
    """Fill the bundle's folder from Maven Central unless it is already fresh."""
    folder = b.folder(settings)
    if not force and is_fresh(b, settings):
        return folder
    require_tools()
    folder.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=folder.parent, prefix=f".{b.name}-") as tmp:
        staging = Path(tmp) / "jars"
        command = [
            "mvn", "-q", "-B", "-s", str(MAVEN_SETTINGS), "-f", str(b.pom),
            "dependency:copy-dependencies", "-DincludeScope=runtime",
            f"-DoutputDirectory={staging}",
        ]  # fmt: skip
        result = subprocess.run(command, capture_output=True, text=True)
        if result.returncode != 0:
            raise JarCacheError(explain_maven_failure(b, result.stdout + result.stderr))
        (staging / STAMP).write_text(_pom_hash(b.pom) + "\n")
        if folder.exists():
            shutil.rmtree(folder)
        staging.rename(folder)
    verify(b, settings)
    return folder


def explain_maven_failure(b: Bundle, output: str) -> str:
    errors = [line for line in output.splitlines() if "[ERROR]" in line and len(line) > 10]
    first = errors[0].split("[ERROR]", 1)[1].strip() if errors else output.strip()[-300:]
    if any(s in output for s in ("Unknown host", "Could not transfer", "Connection refused")):
        return (
            f"cannot reach Maven Central to fetch the {b.name} jars: check the network or "
            f"proxy (Maven said: {first[:300]})"
        )
    return f"Maven could not fetch the {b.name} jars from {b.pom.name}: {first[:400]}"


def classpath(name: str, settings: Settings) -> str:
    """A Java class path (``dir/*``) for a verified bundle."""
    b = bundle(name)
    verify(b, settings)
    return str(b.folder(settings) / "*")


def spark_connector_jars(settings: Settings, *, delta: bool = False) -> list[Path]:
    """Connector jars for ``spark.jars`` (with Delta Lake's when ``delta``), minus any artifact
    pyspark already ships.

    The connectors' runtime dependencies include Scala, Hadoop and slf4j, which pyspark's own jars
    folder already has (at the versions Spark was built with); passing both would put two versions
    of one library on the class path. Only the jobs that read or write the history load Delta.
    """
    import pyspark  # heavy, so imported only here

    shipped = {_artifact(p) for p in (Path(pyspark.__file__).parent / "jars").glob("*.jar")}
    jars = [jar for jar in verify(bundle("spark"), settings) if _artifact(jar) not in shipped]
    if delta:
        have = shipped | {_artifact(jar) for jar in jars}
        jars += [jar for jar in verify(bundle("delta"), settings) if _artifact(jar) not in have]
    return jars


def _artifact(jar: Path) -> str:
    """``kafka-clients-3.9.0.jar`` -> ``kafka-clients``: the name without its version."""
    return re.sub(r"-\d+\.\d+.*$", "", jar.stem)


def main(argv: list[str] | None = None) -> int:
    """``python -m shared.jar_cache [bundle ...]``: fetch bundles (all by default).

    ``--spark-jars`` prints the connector jars for ``spark-submit --jars`` instead.
    """

    args = argv if argv is not None else sys.argv[1:]
    settings = Settings.from_env()
    if args == [
        "--spark-jars"
    ]:  # for spark-submit --jars "$(python -m shared.jar_cache --spark-jars)"
        try:
            print(",".join(str(jar) for jar in spark_connector_jars(settings)))
        except MeshError as exc:
            print(f"error: {exc}", file=sys.stderr)
            return 2
        return 0
    names = args or list(BUNDLES)
    try:
        for name in names:
            b = bundle(name)
            fresh = is_fresh(b, settings)
            folder = fetch(b, settings)
            state = "up to date" if fresh else "fetched"
            print(f"jars {name}: {state} ({len(list(folder.glob('*.jar')))} jars in {folder})")
    except MeshError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
