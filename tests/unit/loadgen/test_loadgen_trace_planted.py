"""``--trace-planted``: planted records go out with a sampled traceparent named in the ground
truth; ordinary and invalid records go out without headers."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from shared.tracing.headers import sampled_parent
from tools.loadgen import StreamConfig
from tools.loadgen.ground_truth import read_ground_truth
from tools.loadgen.producer import DeliveryOutcome, Headers
from tools.loadgen.run import SendOptions, produce


class RecordingSink:
    """Keeps what it is sent (the part of a sink these tests look at)."""

    def __init__(self) -> None:
        self.sent: list[tuple[str, bytes | None, bytes, Headers | None]] = []

    def send(
        self, topic: str, key: bytes | None, value: bytes, headers: Headers | None = None
    ) -> None:
        self.sent.append((topic, key, value, headers))

    def wait(self, seconds: float) -> None:
        pass

    def finish(self, timeout_s: float) -> DeliveryOutcome:
        return DeliveryOutcome()


def _send(config: StreamConfig, tmp_path: Path, trace: bool) -> tuple[RecordingSink, list[Any]]:
    sink = RecordingSink()
    truth = tmp_path / f"truth-{trace}.jsonl"
    options = SendOptions(ground_truth=truth, progress=False, trace_planted=trace)
    report = produce(config, options, sink)
    assert report.planted > 0
    return sink, read_ground_truth(truth)


def test_planted_records_carry_the_sampled_trace_the_ground_truth_names(
    typical_config: StreamConfig, tmp_path: Path
) -> None:
    sink, truth = _send(typical_config, tmp_path, trace=True)
    planted = [e for e in truth if e["entry"] in ("alert", "planted")]
    traced = {index: headers for index, (*_, headers) in enumerate(sink.sent) if headers}
    assert set(traced) == {e["index"] for e in planted}
    for entry in planted:
        parent = sampled_parent(traced[entry["index"]])
        assert parent is not None and parent.is_valid, traced[entry["index"]]
        assert f"{parent.trace_id:032x}" == entry["trace_id"]
    assert len({e["trace_id"] for e in planted}) == len({e["index"] for e in planted})


def test_the_same_seed_gives_the_same_traces(typical_config: StreamConfig, tmp_path: Path) -> None:
    first, _ = _send(typical_config, tmp_path / "a", trace=True)
    again, _ = _send(typical_config, tmp_path / "b", trace=True)
    assert [s[3] for s in first.sent] == [s[3] for s in again.sent]


def test_without_the_option_no_record_has_headers_or_trace_ids(
    typical_config: StreamConfig, tmp_path: Path
) -> None:
    sink, truth = _send(typical_config, tmp_path, trace=False)
    assert all(headers is None for *_, headers in sink.sent)
    assert not any("trace_id" in entry for entry in truth)
