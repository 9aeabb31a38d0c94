from pathlib import Path

import pytest

from shared.errors import ConfigError
from shared.settings import Settings


def test_defaults_need_no_environment():
    settings = Settings.from_env({})
    assert settings.bootstrap_servers == ""
    assert not settings.uses_external_kafka
    assert settings.broker_host == "127.0.0.1"
    assert settings.broker_port == 9092


def test_every_field_is_read_from_its_mesh_variable():
    settings = Settings.from_env(
        {
            "MESH_BOOTSTRAP_SERVERS": "127.0.0.1:19092",
            "MESH_HOME": "/tmp/somewhere",
            "MESH_BROKER_PORT": "19092",
            "MESH_BROKER_START_TIMEOUT": "12.5",
            "MESH_INFLUX_URL": "http://127.0.0.1:8086",
        }
    )
    assert settings.uses_external_kafka
    assert settings.home == Path("/tmp/somewhere")
    assert settings.broker_port == 19092
    assert settings.broker_start_timeout == 12.5
    assert settings.influx_url == "http://127.0.0.1:8086"


def test_standard_otel_variable_is_the_fallback_for_the_otlp_endpoint():
    env = {"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4317"}
    assert Settings.from_env(env).otlp_endpoint == "http://127.0.0.1:4317"
    env["MESH_OTLP_ENDPOINT"] = "http://127.0.0.1:5317"
    assert Settings.from_env(env).otlp_endpoint == "http://127.0.0.1:5317"


@pytest.mark.parametrize(
    ("variable", "value"), [("MESH_BROKER_PORT", "ninety"), ("MESH_BROKER_START_TIMEOUT", "soon")]
)
def test_a_bad_value_names_the_variable_to_fix(variable, value):
    with pytest.raises(ConfigError, match=variable):
        Settings.from_env({variable: value})
