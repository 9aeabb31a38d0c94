"""A detector's ``autoscale:`` block: the bounds and the lag per replica the mesh scales it by.

Declared here, beside the manifest it is part of, so the manifest's reader, ``mesh settings
--manifest``, ``mesh autoscale`` and the autoscaler (:mod:`control.autoscale`) read one
declaration. The rule itself is in :mod:`control.autoscale.policy`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from shared.detector.errors import ManifestError
from shared.typed_document import read_document

#: Kubernetes HPA's default scale-down stabilisation window.
DEFAULT_SCALE_DOWN_AFTER_S = 300.0


@dataclass(frozen=True)
class AutoscalePolicy:
    """A detector's ``autoscale:`` block (its manifest) or what `mesh autoscale` set."""

    #: The fewest replicas to run, however small the lag.
    min: int = field(metadata={"minimum": 1})
    #: The most replicas to run (never more than the input's partitions).
    max: int = field(metadata={"minimum": 1})
    #: Records of lag one replica is expected to work off: desired = ceil(lag / this).
    lag_per_replica: int = field(metadata={"minimum": 1})
    #: Seconds the desired count must have stayed lower before a replica is stopped.
    scale_down_after_s: float = field(
        default=DEFAULT_SCALE_DOWN_AFTER_S, metadata={"minimum": 0, "unit": "seconds"}
    )

    def problem(self) -> str | None:
        """What is wrong with the bounds together (each field is checked on its own already)."""
        if self.min > self.max:
            return f"min ({self.min}) is above max ({self.max})"
        return None


def read_autoscale(value: Any, where: str) -> AutoscalePolicy:
    """An ``autoscale:`` mapping checked field by field, then the bounds together; each mistake
    one line starting with ``where``."""
    policy = AutoscalePolicy(**read_document(AutoscalePolicy, value, where, ManifestError))
    problem = policy.problem()
    if problem:
        raise ManifestError(f"{where}: {problem}")
    return policy


def too_few_partitions(name: str, partitions: int) -> str | None:
    """Why a detector reading ``partitions`` per input cannot be autoscaled (None: it can)."""
    if partitions >= 2:
        return None
    return (
        f"cannot autoscale {name}: its input topic has {partitions} partition, so one replica "
        "does all the work whatever the lag"
    )
