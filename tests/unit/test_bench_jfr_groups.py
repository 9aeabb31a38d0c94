"""The broker profile's grouping: a sample counts for the first group its stack matches."""

from bench.broker.jfr_groups import group_of


def test_request_metrics_win_over_the_append_they_sit_under() -> None:
    stack = [
        "com/yammer/metrics/stats/ExponentiallyDecayingSample.update",
        "org/apache/kafka/storage/internals/log/UnifiedLog.append",
    ]
    assert group_of(stack) == "request metrics (Yammer histograms, sensors)"


def test_an_append_is_log_append() -> None:
    stack = ["org/apache/kafka/storage/internals/log/LogSegment.append", "kafka/Thread.run"]
    assert group_of(stack) == "log append (produce)"


def test_an_unmatched_stack_is_named_by_its_top_frame_and_an_empty_one_by_a_mark() -> None:
    assert group_of(["java/lang/String.hashCode", "x.y"]) == "other: java/lang/String.hashCode"
    assert group_of([]) == "other: ?"
