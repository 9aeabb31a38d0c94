"""The runtime's hot-path test for unsampled records agrees with the full W3C check."""

import pytest

from services.detector_runtime.record_tracing import _surely_unsampled
from shared.tracing import is_sampled

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
