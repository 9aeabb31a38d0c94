"""Fixtures for the interop tests: the real catalogue and the Apache Avro Java runtime.

The Java tests fail (they do not skip) when the jars are missing: a skipped conformance test
looks like a passing one in CI. ``make jars`` fetches them into ``<jars_dir>/avro-java``.
"""

from __future__ import annotations

import shutil

import pytest

from shared.avro import Catalogue, load_catalogue
from shared.settings import Settings


@pytest.fixture(scope="session")
def catalogue() -> Catalogue:
    return load_catalogue(Settings.from_env().schemas_dir)


@pytest.fixture(scope="session")
def avro_java_classpath() -> str:
    """Classpath of the Apache Avro Java library, or a failure that says how to get it."""
    jars_dir = Settings.from_env().jars_dir / "avro-java"
    if not list(jars_dir.glob("avro-1.*.jar")):
        pytest.fail(
            f"the Apache Avro Java jars are missing from {jars_dir}; run `make jars` first",
            pytrace=False,
        )
    if shutil.which("java") is None:
        pytest.fail(
            "`java` is not on PATH; install OpenJDK 17 (apt-get install openjdk-17-jdk-headless)",
            pytrace=False,
        )
    return str(jars_dir / "*")
