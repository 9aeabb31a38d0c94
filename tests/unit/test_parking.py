"""Parked input partitions: which wait for which output leader, when to look again, what is
taken back."""

from __future__ import annotations

from shared.kafka.parking import Parking, foreseen


class _Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_a_partition_is_taken_back_only_when_every_output_it_waits_for_has_a_leader() -> None:
    clock = _Clock()
    parking = Parking(check_every_s=2.0, clock=clock)
    assert not parking and not parking.due()
    assert parking.park({3: {("alerts", 3)}, 6: {("alerts", 6), ("v.changelog", 6)}}) == [3, 6]
    assert parking.park({3: {("detectors.dlq", 1)}}) == []  # already parked: waits for more
    assert parking.to_pause == {3, 6}
    assert parking and not parking.due()  # the look that found the loss was just now
    clock.now += 2.0
    assert parking.due() and not parking.due()
    lost = {("alerts", 6), ("detectors.dlq", 1)}
    assert parking.ready(lost) == []
    assert parking.ready({("alerts", 6)}) == [3]
    parking.forget([3])
    assert parking.awaited() == {("alerts", 6), ("v.changelog", 6)}
    assert parking.describe(["records.transactions"]) == (
        "records.transactions[6] waits for alerts[6], v.changelog[6]",
    )


def test_something_else_waiting_makes_the_look_due() -> None:
    """The metrics reporter's held partitions are looked at on the same clock."""
    clock = _Clock()
    parking = Parking(check_every_s=2.0, clock=clock)
    assert parking.due(also_waiting=True)
    assert not parking.due(also_waiting=True)
    clock.now += 2.0
    assert parking.due(also_waiting=True)


def test_partitions_revoked_while_parked_are_forgotten() -> None:
    parking = Parking()
    parking.park({1: {("alerts", 1)}, 2: {("alerts", 2)}})
    parking.forget([1])
    assert set(parking.waiting) == {2} and parking.to_pause == {2}
    assert parking.describe(["records.a", "records.b"]) == (
        "records.a[2]+records.b[2] waits for alerts[2]",
    )


def test_foreseen_holds_back_the_numbers_of_lost_co_partitioned_outputs_only() -> None:
    """At the first purge, every assigned number whose alerts or changelog partition (the same
    number) is lost waits at once; a lost dead-letter or metrics partition (keyed otherwise)
    holds no number, nor does a lost number this instance does not own."""
    lost = {("alerts", 3), ("alerts", 7), ("velocity.changelog", 4), ("detectors.dlq", 1),
            ("metrics", 0)}  # fmt: skip
    by_number = ["alerts", "velocity.changelog"]
    assert foreseen(lost, [0, 1, 3, 4, 5], by_number) == {
        3: {("alerts", 3)},
        4: {("velocity.changelog", 4)},
    }
    assert foreseen(lost, [0, 1, 3], ["velocity.changelog"]) == {}
    assert foreseen(set(), [0, 1, 3], by_number) == {}
