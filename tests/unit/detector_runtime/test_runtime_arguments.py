"""The runtime's command line: topic overrides and malformed KEY=VALUE options."""

import pytest

from services.detector_runtime.main import build_config, parser
from shared.errors import ConfigError


def config(*extra):
    return build_config(parser().parse_args(["detectors/large_amount", *extra]))


def test_topic_names_default_to_the_contract_under_the_prefix_and_can_be_overridden():
    default = config("--topic-prefix", "p.")
    assert default.topics.inputs == {"transactions": "p.records.transactions"}
    assert (default.topics.alerts, default.group_id) == ("p.alerts", "p.detector.large_amount")
    custom = config("--input", "transactions=mine", "--alerts-topic", "out", "--dlq-topic", "bad")
    assert custom.topics.inputs == {"transactions": "mine"}
    assert (custom.topics.alerts, custom.topics.dlq) == ("out", "bad")
    assert custom.topics.changelog == "detector.large_amount.changelog"


def test_consumer_settings_pass_through():
    assert config("--consumer-config", "session.timeout.ms=6000").extra_consumer_config == {
        "session.timeout.ms": "6000"
    }


@pytest.mark.parametrize(
    ("option", "value", "message"),
    [
        ("--input", "transactions", "--input 'transactions': expected TYPE=TOPIC"),
        ("--input", "transactions=", "--input 'transactions=': expected TYPE=TOPIC"),
        ("--consumer-config", "=6000", "--consumer-config '=6000': expected KEY=VALUE"),
        ("--input", "logins=x", "--input logins=...: large_amount reads transactions only"),
    ],
)
def test_a_malformed_option_is_one_line_naming_it(option, value, message):
    with pytest.raises(ConfigError) as raised:
        config(option, value)
    assert str(raised.value) == message


def test_the_commit_interval_is_given_in_milliseconds_and_bounded():
    assert config().commit_interval_s == 0.5
    assert config("--commit-interval-ms", "0").commit_interval_s == 0.0
    assert config("--commit-interval-ms", "2000").commit_interval_s == 2.0
    for wrong in ("-1", "60001"):
        with pytest.raises(ConfigError) as raised:
            config("--commit-interval-ms", wrong)
        assert str(raised.value).startswith("--commit-interval-ms must be from 0 to 60000")


def test_the_delivery_timeout_is_given_in_milliseconds_and_bounded():
    assert config().delivery_timeout_s == 30.0
    assert config("--delivery-timeout-ms", "5000").delivery_timeout_s == 5.0
    for wrong in ("999", "300001"):
        with pytest.raises(ConfigError) as raised:
            config("--delivery-timeout-ms", wrong)
        assert str(raised.value) == (
            f"--delivery-timeout-ms must be from 1000 to 300000, got {wrong}"
        )
