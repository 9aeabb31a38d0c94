"""The smoke checker counts what a case must judge: lost, duplicated and reordered records."""

from __future__ import annotations

from types import SimpleNamespace

from chaos.report import CaseResult
from chaos.smoke import check, parse_id, record_id


def _driver(acknowledged: list[tuple[int, int]], sent: int | None = None) -> SimpleNamespace:
    ids = {record_id("r1", k, n) for k, n in acknowledged}
    return SimpleNamespace(run="r1", sent=len(ids) if sent is None else sent, acknowledged=ids)


def test_ids_carry_the_run_the_key_and_the_sequence() -> None:
    assert parse_id(record_id("r1", 7, 42)) == ("r1", 7, 42)
    assert parse_id("tx-2f1c9a7e") is None


def test_a_clean_run_has_every_record_once_in_order() -> None:
    driver = _driver([(0, 0), (0, 1), (1, 0)])
    alerts = [(0, record_id("r1", 0, 0)), (0, record_id("r1", 0, 1)), (1, record_id("r1", 1, 0))]
    figures = check(driver, alerts)  # type: ignore[arg-type]
    assert (figures.seen, figures.lost, figures.duplicated, figures.out_of_order) == (3, 0, 0, 0)


def test_lost_duplicated_and_reordered_records_are_each_counted() -> None:
    driver = _driver([(0, 0), (0, 1), (0, 2), (1, 0)])
    alerts = [
        (0, record_id("r1", 0, 0)),
        (0, record_id("r1", 0, 2)),  # 0:1 comes after 0:2: reordered
        (0, record_id("r1", 0, 1)),
        (0, record_id("r1", 0, 0)),  # a replay: a duplicate, not a reordering
        (0, record_id("r0", 0, 5)),  # another run's record: ignored
    ]  # 1:0 never comes: lost
    figures = check(driver, alerts)  # type: ignore[arg-type]
    assert (figures.seen, figures.lost, figures.duplicated, figures.out_of_order) == (3, 1, 1, 1)


def test_a_case_fails_for_each_broken_guarantee_and_a_fault_outside_the_run() -> None:
    figures = check(_driver([(0, 0), (0, 1)], sent=3), [(0, record_id("r1", 0, 0))])  # type: ignore[arg-type]
    result = CaseResult("case", figures, None, mid_run=False, duplicates_allowed=0,
                        offset_regressions=1)  # fmt: skip
    problems = " | ".join(result.problems)
    for expected in ("mid-run", "1 acknowledged record(s) lost", "went backwards",
                     "1 sent, never acknowledged"):  # fmt: skip
        assert expected in problems
    assert not result.passed and "FAIL" in result.line()
