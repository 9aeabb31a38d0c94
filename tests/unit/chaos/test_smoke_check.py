"""The smoke checker counts what a case must judge: lost, duplicated and reordered records."""

from __future__ import annotations

from types import SimpleNamespace

from chaos.report import CaseResult
from chaos.smoke import POISON_PREFIX, check, parse_id, poison_id, record_id


def _driver(
    acknowledged: list[tuple[int, int]],
    sent: int | None = None,
    marked: list[tuple[int, int]] = (),  # type: ignore[assignment]
    poisoned: list[tuple[int, int]] = (),  # type: ignore[assignment]
) -> SimpleNamespace:
    ids = {record_id("r1", k, n) for k, n in acknowledged}
    return SimpleNamespace(run="r1", sent=len(ids) if sent is None else sent, acknowledged=ids,
                           marked={record_id("r1", k, n) for k, n in marked},
                           poisoned={record_id("r1", k, n) for k, n in poisoned})  # fmt: skip


def test_ids_carry_the_run_the_key_and_the_sequence() -> None:
    assert parse_id(record_id("r1", 7, 42)) == ("r1", 7, 42)
    assert parse_id("tx-2f1c9a7e") is None


def test_a_poison_pill_carries_its_id_and_nothing_else_is_taken_for_one() -> None:
    assert poison_id(POISON_PREFIX + b"smk-r1-3-9") == "smk-r1-3-9"
    assert poison_id(b"\x00\x02ab") is None and poison_id(None) is None


def test_bad_records_are_expected_in_the_dead_letters_and_good_ones_in_the_alerts() -> None:
    driver = _driver([(0, 0), (0, 1), (1, 0), (1, 1)], marked=[(0, 1)], poisoned=[(1, 1)])
    alerts = [(0, record_id("r1", 0, 0)), (1, record_id("r1", 1, 0))]
    dead = [record_id("r1", 0, 1), record_id("r1", 1, 1), record_id("r1", 1, 1)]
    figures = check(driver, alerts, dead)  # type: ignore[arg-type]
    assert (figures.seen, figures.dead_lettered, figures.lost, figures.duplicated) == (2, 2, 0, 1)
    # The pill missing from the dead letters is lost, though nothing else is missing.
    figures = check(driver, alerts, dead[:1])  # type: ignore[arg-type]
    assert (figures.lost, figures.dead_lettered) == (1, 1)


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


def test_a_case_s_own_finding_fails_it() -> None:
    figures = check(_driver([(0, 0)]), [(0, record_id("r1", 0, 0))])  # type: ignore[arg-type]
    result = CaseResult("case", figures, 1.0, mid_run=True, duplicates_allowed=0,
                        offset_regressions=0, failures=["lag stayed at 12"])  # fmt: skip
    assert result.problems == ["lag stayed at 12"] and "lag stayed at 12" in result.line()
