"""The kill's replay check: only records beyond the committed checkpoint may be routed again."""

from __future__ import annotations

from chaos.replay_scope import KillMark, Routing, replay_verdict

RAW = "chaos.raw.transactions"
OUT = "chaos.records.transactions"
#: The checkpoint committed partition 0 up to offset 10; the outputs held 12 copies at the kill.
MARK = KillMark({RAW: {0: 10}}, {(OUT, 0): 12})


def _routed(*sources: int) -> list[Routing]:
    """Copies of raw partition 0's records at ``sources`` offsets, in output order."""
    return [Routing(f"{RAW}:0:{s}", OUT, 0, position) for position, s in enumerate(sources)]


def test_uncommitted_records_may_be_routed_again_once() -> None:
    verdict = replay_verdict(MARK, _routed(*range(12), 10, 11, 12))
    assert verdict == (2, 2, [])


def test_a_committed_record_routed_again_fails() -> None:
    verdict = replay_verdict(MARK, _routed(*range(12), 9, 10, 11))
    assert verdict.replayed == 3
    assert verdict.failures == [
        f"1 records routed again after the kill though their batch was committed before it, "
        f"e.g. {RAW}:0:9"
    ]


def test_a_record_routed_twice_after_the_kill_fails() -> None:
    verdict = replay_verdict(MARK, _routed(*range(12), 11, 11))
    assert verdict.failures == [f"1 records routed more than once after the kill, e.g. {RAW}:0:11"]


def test_nothing_committed_lets_every_routed_record_repeat() -> None:
    mark = KillMark({}, {(OUT, 0): 3})
    assert replay_verdict(mark, _routed(0, 1, 2, 0, 1, 2)) == (3, 3, [])


def test_a_partition_the_checkpoint_does_not_name_starts_at_zero() -> None:
    assert MARK.uncommitted(f"{RAW}:1:0")
    assert not MARK.uncommitted(f"{RAW}:0:9")
