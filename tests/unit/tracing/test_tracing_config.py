"""TracingConfig from the environment: endpoint, traces URL, sample ratio and export bounds."""

from __future__ import annotations

import pytest

from shared.errors import ConfigError
from shared.settings import Settings
from shared.tracing import TracingConfig
from shared.tracing.config import traces_url


def config(env: dict[str, str]) -> TracingConfig:
    return TracingConfig.from_env(Settings.from_env(env), env)


def test_without_an_endpoint_tracing_is_off_and_samples_one_percent() -> None:
    found = config({})
    assert not found.enabled
    assert found.endpoint == ""
    assert found.sample_ratio == 0.01


def test_mesh_otlp_endpoint_turns_export_on_and_gets_the_traces_path() -> None:
    found = config({"MESH_OTLP_ENDPOINT": "http://127.0.0.1:4318"})
    assert found.enabled
    assert found.traces_url == "http://127.0.0.1:4318/v1/traces"


def test_the_standard_otel_variable_is_the_fallback() -> None:
    found = config({"OTEL_EXPORTER_OTLP_ENDPOINT": "https://collector:4318/"})
    assert found.traces_url == "https://collector:4318/v1/traces"
    both = {"OTEL_EXPORTER_OTLP_ENDPOINT": "http://other:4318", "MESH_OTLP_ENDPOINT": "http://a:1"}
    assert config(both).traces_url == "http://a:1/v1/traces"


@pytest.mark.parametrize(
    ("endpoint", "url"),
    [
        ("http://h:4318", "http://h:4318/v1/traces"),
        ("http://h:4318/", "http://h:4318/v1/traces"),
        ("http://h:4318/v1/traces", "http://h:4318/v1/traces"),
        ("http://h:4318/v1/traces/", "http://h:4318/v1/traces"),
        ("http://h/otlp", "http://h/otlp/v1/traces"),
    ],
)
def test_the_traces_path_is_added_unless_the_endpoint_already_ends_with_it(
    endpoint: str, url: str
) -> None:
    assert traces_url(endpoint) == url


def test_sample_ratio_and_export_bounds_come_from_their_variables() -> None:
    found = config(
        {
            "MESH_TRACE_SAMPLE_RATIO": "1",
            "MESH_TRACE_EXPORT_TIMEOUT_S": "0.5",
            "MESH_TRACE_QUEUE_SIZE": "100",
            "MESH_TRACE_SCHEDULE_DELAY_S": "0.2",
        }
    )
    assert found.sample_ratio == 1.0
    assert found.export_timeout_s == 0.5
    assert found.queue_size == 100
    assert found.max_export_batch_size == 100  # a batch never exceeds the queue
    assert found.schedule_delay_s == 0.2
    assert config({"MESH_TRACE_SAMPLE_RATIO": "0"}).sample_ratio == 0.0


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("MESH_TRACE_SAMPLE_RATIO", "abc"),
        ("MESH_TRACE_SAMPLE_RATIO", "1.5"),
        ("MESH_TRACE_SAMPLE_RATIO", "-0.1"),
        ("MESH_TRACE_SAMPLE_RATIO", "nan"),
        ("MESH_TRACE_SAMPLE_RATIO", "1%"),
        ("MESH_TRACE_EXPORT_TIMEOUT_S", "0"),
        ("MESH_TRACE_EXPORT_TIMEOUT_S", "inf"),
        ("MESH_TRACE_QUEUE_SIZE", "0"),
        ("MESH_TRACE_QUEUE_SIZE", "1.5"),
        ("MESH_TRACE_SCHEDULE_DELAY_S", "-1"),
    ],
)
def test_a_bad_value_is_a_one_line_config_error_naming_the_variable(name: str, value: str) -> None:
    with pytest.raises(ConfigError) as raised:
        config({name: value})
    message = str(raised.value)
    assert f"{name}={value!r}" in message
    assert "\n" not in message


@pytest.mark.parametrize("name", ["MESH_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_ENDPOINT"])
def test_an_endpoint_that_is_not_an_http_url_is_refused_naming_its_variable(name: str) -> None:
    with pytest.raises(ConfigError, match=f"^{name}='127.0.0.1:4317' is not an http"):
        config({name: "127.0.0.1:4317"})
