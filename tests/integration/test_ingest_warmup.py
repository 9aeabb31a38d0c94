"""Routing's warm-up before the queries start (services/ingest/warmup.py): it plans and runs the
real routing transform on the session's Spark, touches no broker, and says what it took."""

from __future__ import annotations

import pytest

from services.ingest.config import IngestConfig
from services.ingest.inputs import IngestInputs
from services.ingest.validation import checked_types
from services.ingest.warmup import said, warm_routing
from shared.avro.catalogue import Catalogue
from shared.settings import Settings

pytestmark = pytest.mark.integration


def test_the_warm_up_runs_routing_each_round_without_a_broker(spark) -> None:  # type: ignore[no-untyped-def]
    settings = Settings()
    catalogue = Catalogue.load(settings.schemas_dir)
    inputs = IngestInputs("127.0.0.1:1", catalogue, checked_types(catalogue))  # nothing listens
    took = warm_routing(spark, inputs, IngestConfig.from_settings(settings), "test", 3)
    assert len(took) == 3 and all(t > 0 for t in took)
    assert said(took).startswith("ingest: routing's plan warmed 3 times in ")
    assert warm_routing(spark, inputs, IngestConfig.from_settings(settings), "test", 0) == []
