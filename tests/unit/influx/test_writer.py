"""InfluxWriter against a fake InfluxDB on a real socket: batching, retry with backoff, the
bounded buffer, and what a 400 does."""

from __future__ import annotations

import json
import time

from fake_influx import Answer, FakeClock, FakeInflux

from shared.influx.line_protocol import Point
from shared.influx.writer import InfluxWriter


def points(count: int, start: int = 0) -> list[Point]:
    return [Point("m", {"k": "v"}, {"n": i}, i) for i in range(start, start + count)]


def lines(count: int, start: int = 0) -> list[str]:
    return [f"m,k=v n={i}i {i}" for i in range(start, start + count)]


def test_points_go_out_in_batches_of_batch_size_oldest_first(fake_influx: FakeInflux) -> None:
    writer = InfluxWriter(fake_influx.url, "metrics db", batch_size=5)
    writer.write(points(12))

    create, *writes = fake_influx.requests
    assert (create.method, create.path, create.params["q"]) == (
        "POST",
        "/query",
        'CREATE DATABASE "metrics db"',
    )
    assert [len(r.body.decode().splitlines()) for r in writes] == [5, 5, 2]
    assert all(r.params == {"db": "metrics db", "precision": "ns"} for r in writes)
    assert all(r.method == "POST" and r.body.endswith(b"\n") for r in writes)
    assert fake_influx.written_lines() == lines(12)
    stats = writer.stats()
    assert (stats.written, stats.buffered, stats.failures, stats.healthy) == (12, 0, 0, True)
    assert stats.last_success_ms > 0


def test_database_is_created_once_before_the_first_write(fake_influx: FakeInflux) -> None:
    writer = InfluxWriter(fake_influx.url, 'say "hi"')
    writer.write(points(1))
    writer.write(points(1, 1))
    queries = [r for r in fake_influx.requests if r.path == "/query"]
    assert [q.params["q"] for q in queries] == ['CREATE DATABASE "say \\"hi\\""']


def test_server_errors_keep_the_points_and_back_off_exponentially(
    fake_influx: FakeInflux, clock: FakeClock
) -> None:
    writer = InfluxWriter(
        fake_influx.url, "db", backoff_initial_s=0.5, backoff_max_s=1.5, clock=clock
    )
    fake_influx.fail_writes(500, 4)
    expected_pauses = [0.5, 1.0, 1.5, 1.5]  # doubling, capped at backoff_max_s

    writer.write(points(3))
    for attempt, pause in enumerate(expected_pauses, start=1):
        assert len(fake_influx.writes()) == attempt
        stats = writer.stats()
        assert (stats.failures, stats.buffered, stats.healthy) == (attempt, 3, False)
        assert "HTTP 500" in stats.last_error
        clock.advance(pause - 0.01)
        writer.write([])  # still backing off: no request
        assert len(fake_influx.writes()) == attempt
        clock.advance(0.01)
        writer.write([])  # the pause is over: the next attempt

    stats = writer.stats()
    assert (stats.written, stats.buffered, stats.healthy) == (3, 0, True)
    assert fake_influx.written_lines()[-3:] == lines(3)


def test_success_resets_the_backoff(fake_influx: FakeInflux, clock: FakeClock) -> None:
    writer = InfluxWriter(fake_influx.url, "db", backoff_initial_s=0.5, clock=clock)
    fake_influx.fail_writes(503, 2)
    writer.write(points(1))
    clock.advance(0.5)
    writer.write([])  # second failure: pause 1.0
    clock.advance(1.0)
    writer.write([])  # success
    fake_influx.fail_writes(503, 1)
    writer.write(points(1, 1))  # failure again: the pause starts over at 0.5
    clock.advance(0.5)
    writer.write([])
    assert writer.stats().buffered == 0
    assert writer.stats().failures == 3


def test_bad_request_drops_that_batch_counts_it_and_goes_on(fake_influx: FakeInflux) -> None:
    writer = InfluxWriter(fake_influx.url, "db", batch_size=2)
    fake_influx.fail_writes(400, 1, "unable to parse 'm n=x 1': invalid boolean")
    writer.write(points(5))

    assert len(fake_influx.writes()) == 3  # the refused batch is not retried
    stats = writer.stats()
    assert (stats.written, stats.rejected, stats.buffered) == (3, 2, 0)
    assert stats.healthy, "InfluxDB answered: the data was at fault, not the server"
    assert "invalid boolean" in stats.last_error
    assert stats.failures == 0


def test_partial_write_counts_only_the_points_influx_refused(fake_influx: FakeInflux) -> None:
    writer = InfluxWriter(fake_influx.url, "db")
    message = (
        'partial write: field type conflict: input field "n" on measurement "m" is type '
        "integer, already exists as type float dropped=3"
    )
    fake_influx.answers.append(Answer(400, json.dumps({"error": message})))
    writer.write(points(10))
    stats = writer.stats()
    assert (stats.written, stats.rejected, stats.buffered) == (7, 3, 0)


def test_full_buffer_drops_the_oldest_points(fake_influx: FakeInflux) -> None:
    fake_influx.stop()
    writer = InfluxWriter(fake_influx.url, "db", max_buffered=10, backoff_initial_s=0.01)
    for i in range(25):
        writer.write(points(1, i))
    stats = writer.stats()
    assert (stats.buffered, stats.dropped, stats.written) == (10, 15, 0)

    fake_influx.start()
    assert writer.flush(5.0)
    assert fake_influx.written_lines() == lines(10, 15)  # the newest ten, in order


def test_refused_connection_never_raises_and_delivers_after_restart(
    fake_influx: FakeInflux,
) -> None:
    writer = InfluxWriter(fake_influx.url, "db", backoff_initial_s=0.05)
    writer.write(points(2))
    fake_influx.stop()

    writer.write(points(3, 2))
    stats = writer.stats()
    assert (stats.written, stats.buffered, stats.healthy) == (2, 3, False)
    assert stats.failures >= 1
    assert "refused" in stats.last_error.lower()

    fake_influx.start()
    assert writer.flush(5.0)
    assert fake_influx.written_lines() == lines(5)
    stats = writer.stats()
    assert (stats.written, stats.buffered, stats.healthy) == (5, 0, True)


def test_a_request_that_times_out_is_a_failure_and_is_retried(fake_influx: FakeInflux) -> None:
    writer = InfluxWriter(fake_influx.url, "db", timeout_s=0.2, backoff_initial_s=0.05)
    fake_influx.answers.append(Answer(204, delay_s=1.0))
    writer.write(points(1))
    assert writer.stats().healthy is False
    assert "timed out" in writer.stats().last_error
    assert writer.flush(5.0)
    assert writer.stats().written == 1


def test_flush_waits_out_the_backoff_and_gives_up_at_its_timeout(
    fake_influx: FakeInflux,
) -> None:
    writer = InfluxWriter(fake_influx.url, "db", backoff_initial_s=0.05, backoff_max_s=0.1)
    fake_influx.fail_writes(500, 1000)
    writer.write(points(2))
    started = time.monotonic()
    assert writer.flush(0.6) is False
    elapsed = time.monotonic() - started
    assert 0.45 < elapsed < 2.0
    assert len(fake_influx.writes()) >= 5  # it kept trying while time was left
    assert writer.stats().buffered == 2


def test_flush_of_buffered_points_retries_until_influx_takes_them(
    fake_influx: FakeInflux,
) -> None:
    writer = InfluxWriter(fake_influx.url, "db", backoff_initial_s=0.05)
    fake_influx.fail_writes(500, 3)
    writer.write(points(4))
    assert writer.stats().buffered == 4
    assert writer.flush(5.0)
    assert writer.stats().failures == 3
    assert fake_influx.written_lines()[-4:] == lines(4)


def test_database_not_found_creates_it_again(fake_influx: FakeInflux) -> None:
    writer = InfluxWriter(fake_influx.url, "db", backoff_initial_s=0.01)
    writer.write(points(1))
    fake_influx.fail_writes(404, 1, 'database not found: "db"')
    writer.write(points(1, 1))
    assert writer.flush(5.0)
    creates = [r for r in fake_influx.requests if r.path == "/query"]
    assert len(creates) == 2
    assert writer.stats().written == 2


def test_database_creation_failure_is_a_failure_not_an_exception(
    fake_influx: FakeInflux,
) -> None:
    fake_influx.query_answers.append(Answer(500, '{"error":"disk full"}'))
    writer = InfluxWriter(fake_influx.url, "db", backoff_initial_s=0.01)
    writer.write(points(1))
    stats = writer.stats()
    assert (stats.failures, stats.buffered, stats.healthy) == (1, 1, False)
    assert "disk full" in stats.last_error
    assert writer.flush(5.0)


def test_a_batch_refused_whole_is_no_success(fake_influx: FakeInflux) -> None:
    writer = InfluxWriter(fake_influx.url, "db")
    fake_influx.fail_writes(400, 1, "unable to parse 'x': invalid field format")
    writer.write(points(2))
    stats = writer.stats()
    assert (stats.rejected, stats.written, stats.healthy, stats.last_success_ms) == (2, 0, True, 0)
