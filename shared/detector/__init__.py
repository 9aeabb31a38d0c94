"""The detector SDK: declare a detector as a plain function; the runtime owns the loop.

Modules, one concern each:
  declaration  ``@detector(...)``: name, version, inputs, state -> a Detector
  state        KeyValue (TTL) and Window (tumbling / hopping) stores, changelog, undo
  context      ``ctx``: state stores and ``ctx.alert(...)`` for the current record
  alerts       the Alert record and its deterministic ``alert_id``
  task         one partition's detector + state: retries, undo, shared by harness and runtime
  harness      run a detector over records without a broker
  manifest     manifest.yaml: owner, replicas, start position
  loading      find a detector by folder or module and check it against its manifest
  errors       DeclarationError, ManifestError, RetriableError, StateError

Example::

    from shared.detector import Window, detector

    @detector(name="velocity", version="1.0.0", inputs=["transactions"],
              state=[Window("tx", size_ms=60_000, hop_ms=5_000)])
    def detect(record, ctx):
        tx = ctx.window("tx")
        tx.add(record["customer_id"], record["event_time"])
        if tx.max(record["customer_id"], record["event_time"]) >= 5:
            yield ctx.alert("transactions_per_window", severity="MEDIUM", score=1.0,
                            reason="5 or more transactions within 60 s")
"""

from shared.detector.alerts import alert_id, build_alert
from shared.detector.context import Context
from shared.detector.declaration import INPUT_TYPES, Detector, detector
from shared.detector.errors import (
    DeclarationError,
    DetectorError,
    ManifestError,
    RetriableError,
    StateError,
)
from shared.detector.harness import HarnessResult, run
from shared.detector.loading import load_detector
from shared.detector.manifest import Manifest, load_manifest, parse_manifest
from shared.detector.state import Change, KeyValue, TaskState, Window, WindowValue
from shared.detector.task import Outcome, RetryPolicy, Task

__all__ = [
    "INPUT_TYPES",
    "Change",
    "Context",
    "DeclarationError",
    "Detector",
    "DetectorError",
    "HarnessResult",
    "KeyValue",
    "Manifest",
    "ManifestError",
    "Outcome",
    "RetriableError",
    "RetryPolicy",
    "StateError",
    "Task",
    "TaskState",
    "Window",
    "WindowValue",
    "alert_id",
    "build_alert",
    "detector",
    "load_detector",
    "load_manifest",
    "parse_manifest",
    "run",
]
