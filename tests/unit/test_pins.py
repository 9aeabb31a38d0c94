"""The versions that must agree across Python and Maven really do."""

import re

import pyspark

from shared.settings import PROJECT_ROOT

MAVEN = PROJECT_ROOT / "infra" / "maven"


def _property(pom: str, name: str) -> str:
    match = re.search(rf"<{name}>([^<]+)</{name}>", (MAVEN / pom).read_text())
    assert match, f"{pom} declares no {name}"
    return match.group(1)


def test_spark_connectors_match_the_pinned_pyspark():
    lock = (PROJECT_ROOT / "requirements.lock").read_text()
    pinned = re.search(r"^pyspark==(\S+)$", lock, re.M)
    assert pinned, "requirements.lock does not pin pyspark"
    assert _property("spark-connectors.pom.xml", "spark.version") == pinned.group(1)
    assert pyspark.__version__ == pinned.group(1)


def test_the_broker_is_a_pinned_kafka_4_release():
    version = _property("kafka-broker.pom.xml", "kafka.version")
    assert re.fullmatch(r"4\.\d+\.\d+", version)
