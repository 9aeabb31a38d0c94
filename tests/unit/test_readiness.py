"""`mesh up`'s readiness rule (control.readiness): routed means every probed topic grew; a
detector has read the probe when its group committed at or past where the probe left each
partition it reads."""

from __future__ import annotations

from control.readiness import grown, has_read

TX, LOGINS = "records.transactions", "records.logins"


def test_a_probe_is_routed_only_when_every_probed_topic_grew() -> None:
    before = {(TX, 0): 5, (TX, 1): 7, (LOGINS, 0): 3}
    only_tx = {(TX, 0): 5, (TX, 1): 8, (LOGINS, 0): 3}
    assert grown(before, only_tx, (TX, LOGINS)) == {}
    both = {(TX, 0): 5, (TX, 1): 8, (LOGINS, 0): 4}
    assert grown(before, both, (TX, LOGINS)) == {(TX, 1): 8, (LOGINS, 0): 4}


def test_a_partition_new_since_the_probe_counts_as_grown_from_zero() -> None:
    assert grown({}, {(TX, 3): 1}, (TX,)) == {(TX, 3): 1}
    assert grown({(TX, 3): 0}, {(TX, 3): 0}, (TX,)) == {}


def test_a_detector_has_read_the_probe_once_committed_past_it_on_its_own_topics() -> None:
    targets = {(TX, 1): 8, (LOGINS, 0): 4}
    assert has_read(targets, (TX,), {(TX, 1): 8})
    assert not has_read(targets, (TX,), {(TX, 1): 7})
    assert not has_read(targets, (TX, LOGINS), {(TX, 1): 8, (LOGINS, 0): 3})
    assert has_read(targets, (TX, LOGINS), {(TX, 1): 9, (LOGINS, 0): 4})


def test_a_group_that_never_committed_or_reads_nothing_probed_has_not_read_it() -> None:
    assert not has_read({(TX, 1): 8}, (TX,), {(TX, 1): None})
    assert not has_read({(TX, 1): 8}, (TX,), {})
    assert not has_read({(TX, 1): 8}, (LOGINS,), {(LOGINS, 0): 100})
