"""The detector process's GC settings: startup objects frozen, young collections rarer."""

from __future__ import annotations

import gc
from collections.abc import Iterator

import pytest

from services.detector_runtime.gc_tuning import YOUNG_THRESHOLD, tune_gc


@pytest.fixture
def restored_gc() -> Iterator[None]:
    before = gc.get_threshold()
    yield
    gc.set_threshold(*before)
    gc.unfreeze()


@pytest.mark.usefixtures("restored_gc")
def test_tune_gc_freezes_what_is_alive_and_raises_only_the_young_threshold() -> None:
    _, middle, old = gc.get_threshold()
    alive = object.__new__(type("Alive", (), {}))  # a container alive at start-up
    tune_gc()
    assert gc.get_threshold() == (YOUNG_THRESHOLD, middle, old)
    assert gc.get_freeze_count() > 0
    assert not any(o is alive for o in gc.get_objects())  # out of the collector's sight


@pytest.mark.usefixtures("restored_gc")
def test_fewer_young_collections_for_the_same_allocations() -> None:
    def young_collections(allocations: int) -> int:
        seen = [0]

        def count(phase: str, info: dict) -> None:
            if phase == "start" and info["generation"] == 0:
                seen[0] += 1

        gc.callbacks.append(count)
        try:
            kept = [[] for _ in range(allocations)]  # noqa: F841 - alive, as a batch's messages
        finally:
            gc.callbacks.remove(count)
        return seen[0]

    gc.set_threshold(700, 10, 10)  # CPython's default, whatever the test process runs with
    default = young_collections(100_000)
    tune_gc()
    tuned = young_collections(100_000)
    assert default >= 100  # one per ~700 containers kept
    assert tuned <= 100_000 // YOUNG_THRESHOLD + 1
