"""Fixtures of the tracing unit tests: tracing that exports into memory, shut down afterwards."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest
from tracing_memory import MemoryTracing
from tracing_memory import memory_tracing as make_memory_tracing


@pytest.fixture
def memory_tracing() -> Iterator[Callable[..., MemoryTracing]]:
    """``memory_tracing(sample_ratio=1.0, **TracingConfig fields)`` -> a MemoryTracing."""
    made: list[MemoryTracing] = []

    def make(sample_ratio: float = 1.0, **config: Any) -> MemoryTracing:
        made.append(make_memory_tracing(sample_ratio, **config))
        return made[-1]

    yield make
    for memory in made:
        memory.tracing.shutdown(timeout_s=5)
