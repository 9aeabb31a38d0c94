"""The runtime's hot-path test for unsampled records agrees with the full W3C check."""

import pytest

from shared.tracing import is_sampled
from shared.tracing.headers import surely_unsampled as _surely_unsampled

TRACE, SPAN = "4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7"


@pytest.mark.parametrize(
    "headers",
    [
        [("traceparent", f"00-{TRACE}-{SPAN}-00".encode())],
        [("traceparent", f"00-{TRACE}-{SPAN}-01".encode())],
        [("traceparent", f"00-{TRACE}-{SPAN}-03".encode())],
        [("traceparent", f"00-{TRACE}-{SPAN}-02".encode())],
        [("mesh.source", b"raw:1:2"), ("traceparent", f"00-{TRACE}-{SPAN}-01".encode())],
        [("Traceparent", f"00-{TRACE}-{SPAN}-01".encode())],
        [("traceparent", b"00-not-a-trace-01")],
        [("traceparent", f"00-{'0' * 32}-{SPAN}-01".encode())],
        [("traceparent", None)],
        [("mesh.source", b"raw:1:2")],
    ],
)
def test_a_record_called_surely_unsampled_is_never_sampled(headers) -> None:
    # The fast test may only say "unsampled" when the full check agrees; when it cannot tell,
    # the full check decides.
    if _surely_unsampled(headers):
        assert not is_sampled(headers)


def test_the_usual_unsampled_header_is_answered_by_the_fast_test() -> None:
    assert _surely_unsampled([("traceparent", f"00-{TRACE}-{SPAN}-00".encode())])
    assert not _surely_unsampled([("traceparent", f"00-{TRACE}-{SPAN}-01".encode())])


def test_a_detector_whose_manifest_says_no_tracing_makes_no_spans_even_with_an_endpoint() -> None:
    from dataclasses import replace

    from services.detector_runtime.record_tracing import RecordTracing
    from shared.settings import Settings

    settings = replace(Settings.from_env(), otlp_endpoint="http://127.0.0.1:9")
    on = RecordTracing(settings, "detector.x", "x@h:1:2", "1", "g")
    off = RecordTracing(settings, "detector.x", "x@h:1:3", "1", "g", enabled=False)
    try:
        assert on.spans is not None and on.tracing.enabled
        assert off.spans is None and not off.tracing.enabled
    finally:
        on.close(timeout_s=1)
        off.close(timeout_s=1)
