"""Cases 8 and 9: bad records in a detector's input, at steady load.

**throwing_detector** (case 9): the throwing detector fails (a retriable lookup timeout) on every
transaction of one merchant, one record in MARKED_EVERY. Each must be retried a bounded number of
times (RETRIES more attempts, backing off) and then dead-lettered with its original bytes and the
headers that say why, while every other record is alerted as usual; after the load, the group's
lag comes back to 0 (a detector stuck on a record would hold it up for ever).

**poison_pills** (case 8): one record in POISON_EVERY is bytes that are no Avro record. Each
must be dead-lettered at the decode stage with its exact bytes and where it came from, and the
valid records alerted as usual. Then the cost of the pills: one instance drains DRAIN_RECORDS
records with 1 % pills and as many clean ones (topics of their own, the same run), and the case
prints the ratio of valid records per second. In `make chaos` the drains go clean, pills,
pills, clean (drift weighs on both alike), each kind's faster drain counts (as timeit takes the
best run: a slower one measured whatever else the 2 cores were doing, one mean of two drains
of a few seconds each swung from 0.89 to 1.03 between two runs) and the ratio must be at least
0.9; the short form in `make test` prints it and judges nothing by timing.
"""

from __future__ import annotations

import time
from pathlib import Path

from chaos.case_mesh import CaseMesh
from chaos.case_run import CaseRun, Load
from chaos.report import CaseResult
from chaos.smoke import POISON_PREFIX, poison_id
from shared.errors import MeshError
from shared.kafka.inspect import group_lag
from shared.kafka.security import client_security
from shared.settings import Settings

THROWING = Path(__file__).parent / "throwing"
#: One record in this many is the throwing detector's bad merchant: rare enough that the retries'
#: back-off (0.35 s a record) leaves the instance time to keep up.
MARKED_EVERY = 1000
RETRIES = 3
#: One record in this many is a poison pill (1 %).
POISON_EVERY = 100
#: How long the case waits for the lag to come back to 0 after the load.
LAG_WAIT_S = 120.0
#: Records each drain of the poison case reads (short form, long form).
DRAIN_RECORDS = (20_000, 100_000)
#: The slowest the valid records may drain with 1 % pills, against the clean drain (long form).
DRAIN_RATIO_MIN = 0.9


def throwing_detector(settings: Settings, work: Path, short: bool) -> CaseResult:
    failures: list[str] = []
    mesh = CaseMesh.create(settings, work)
    with CaseRun(mesh, Load.of(short), THROWING, marked_every=MARKED_EVERY) as run:
        run.instance("a", ["--retries", str(RETRIES)])
        run.start_load()
        run.sleep_until(0.5)
        first_letter = run.dead_letters.first_at
        alerts_then = run.tap.count()
        mid_run = first_letter is not None and run.driver.running
        mid_run &= run.finish()
        # The detector went on after its first failure: alerts kept coming.
        mid_run &= run.tap.count() > alerts_then
        lag = _wait_for_no_lag(mesh.settings, run.group, mesh.source)
        recover = time.monotonic() - run.stopped_at if lag == 0 else None
        failures += _dead_letter_problems(run, "detect", f"{RETRIES + 1}", "RetriableError")
        alerted = run.tap.seen & run.driver.marked
        if alerted:
            failures.append(f"{len(alerted)} record(s) of the failing merchant were alerted")
        if lag:
            failures.append(f"the group's lag is {lag}, not 0, {LAG_WAIT_S:.0f} s after the load")
        back = "never" if recover is None else f"{recover:.1f} s after the load"
        run.notes.append(
            f"{len(run.driver.marked)} records of the failing merchant, each tried "
            f"{RETRIES + 1} times; lag back to 0 {back}"
        )
    return run.result("throwing_detector", recover_s=recover, mid_run=mid_run,
                      duplicates_allowed=0, failures=failures)  # fmt: skip


def poison_pills(settings: Settings, work: Path, short: bool) -> CaseResult:
    failures: list[str] = []
    with CaseRun(CaseMesh.create(settings, work / "steady"), Load.of(short),
                 poison_every=POISON_EVERY) as run:  # fmt: skip
        run.instance("a")
        run.start_load()
        run.sleep_until(0.5)
        mid_run = run.dead_letters.first_at is not None and run.driver.running
        alerts_then = run.tap.count()
        mid_run &= run.finish()
        mid_run &= run.tap.count() > alerts_then
        failures += _dead_letter_problems(run, "decode", "1", "")
    records = DRAIN_RECORDS[0 if short else 1]
    # Clean, pills, pills, clean in the long form: the machine's drift weighs on both alike.
    order = [None, POISON_EVERY] if short else [None, POISON_EVERY, POISON_EVERY, None]
    rates: dict[int | None, list[float]] = {None: [], POISON_EVERY: []}
    for n, every in enumerate(order):
        rates[every].append(_drain_rate(settings, work / f"drain-{n}", records, every))
    clean, pills = (max(rates[k]) for k in (None, POISON_EVERY))
    ratio = pills / clean if clean else 0.0
    aim = "" if short else f" (must be >= {DRAIN_RATIO_MIN})"
    run.notes.append(f"{len(run.driver.poisoned)} pills in {run.driver.sent} records at steady "
                     f"load; drains of {records} records: {clean:,.0f} valid/s clean, "
                     f"{pills:,.0f} with 1 % pills, ratio {ratio:.2f}{aim}")  # fmt: skip
    if not short and ratio < DRAIN_RATIO_MIN:
        failures.append(f"valid records drain at {ratio:.2f} of the clean rate with 1 % pills")
    return run.result("poison_pills", recover_s=None, mid_run=mid_run, duplicates_allowed=0,
                      failures=failures)  # fmt: skip


def _drain_rate(settings: Settings, work: Path, records: int, poison_every: int | None) -> float:
    """Valid records per second one echo instance alerts, draining ``records`` preloaded ones:
    from its first alert to its last (its start and the group join are not the pills' cost)."""
    with CaseRun(CaseMesh.create(settings, work), Load(0, 0), poison_every=poison_every) as run:
        run.driver.fill(records)
        valid = run.driver.acknowledged - run.driver.poisoned
        run.instance("a")
        done = run.tap.wait_for(valid, time.monotonic(), LAG_WAIT_S)
        first = run.tap.first_at
        if done is None or first is None:
            return 0.0
        return len(valid) / max(time.monotonic() - first, 1e-3)


def _wait_for_no_lag(settings: Settings, group: str, topic: str) -> int | None:
    """The group's lag on ``topic`` once it is 0, or the last seen after LAG_WAIT_S."""
    deadline = time.monotonic() + LAG_WAIT_S
    lag = None
    while time.monotonic() < deadline:
        try:
            lag = group_lag(settings.bootstrap_servers, group, [topic], 5,
                            client_security(settings)).total  # fmt: skip
        except MeshError:
            lag = None
        if lag == 0:
            return 0
        time.sleep(0.5)
    return lag


def _dead_letter_problems(run: CaseRun, stage: str, attempts: str, error: str) -> list[str]:
    """What is wrong with the case's dead letters: a header missing or saying the wrong thing,
    a poison pill whose bytes changed on the way."""
    problems = []
    mine = [(value, headers) for value, headers in run.dead_letters.letters
            if headers.get("mesh.error.source.topic") == run.mesh.source]  # fmt: skip
    for value, headers in mine:
        wrong = []
        if headers.get("mesh.error.stage") != stage:
            wrong.append(f"stage {headers.get('mesh.error.stage')!r}")
        if headers.get("mesh.error.attempts") != attempts:
            wrong.append(f"attempts {headers.get('mesh.error.attempts')!r}")
        if not headers.get("mesh.error.class", "").endswith(error):
            wrong.append(f"class {headers.get('mesh.error.class')!r}")
        for name in ("mesh.error.source.partition", "mesh.error.source.offset",
                     "mesh.error.message", "mesh.error.instance.id"):  # fmt: skip
            if not headers.get(name):
                wrong.append(f"no {name}")
        pill = poison_id(value)
        if pill is not None and value != POISON_PREFIX + pill.encode():
            wrong.append("the original bytes changed")
        if wrong:
            problems.append(f"a dead letter has {', '.join(wrong)}")
            break  # one example says enough; the count follows
    if not mine:
        problems.append("no dead letter from the case's input")
    return problems
