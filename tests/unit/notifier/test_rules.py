"""The notifier's routing file: what it routes where, and every mistake named by line and field."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from services.notifier.rules import (
    SEVERITIES,
    FileChannel,
    RulesError,
    WebhookChannel,
    load_rules,
    parse_rules,
)
from shared.settings import PROJECT_ROOT

RULES = """\
channels:
  team:
    type: webhook
    url: http://127.0.0.1:8787/alerts
    timeout_s: 2.5
    max_attempts: 3
    headers: {X-Team: fraud}
  log:
    type: file
    path: out.jsonl
segments:
  vip: ["cust_vip_*", "cust_0001"]
rules:
  - match: {detector: velocity, severity: [HIGH, CRITICAL]}
    channels: [team, log]
  - match: {segment: vip}
    channels: team
  - channels: [log]
"""


def _alert(detector: str = "large_amount", severity: str = "LOW", customer: str = "c1") -> dict:
    return {"detector": detector, "severity": severity, "customer_id": customer}


def test_the_first_matching_rule_routes_an_alert() -> None:
    routing = parse_rules(RULES)
    rule, channels = routing.route(_alert("velocity", "HIGH"))
    assert rule is not None and rule.line == 14
    assert [c.name for c in channels] == ["team", "log"]
    assert [c.name for c in routing.route(_alert("velocity", "LOW"))[1]] == ["log"]
    assert [c.name for c in routing.route(_alert(customer="cust_vip_7"))[1]] == ["team"]
    assert [c.name for c in routing.route(_alert(customer="cust_0001"))[1]] == ["team"]


def test_channels_carry_their_settings_and_defaults() -> None:
    routing = parse_rules(RULES)
    team = routing.channels["team"]
    assert team == WebhookChannel("team", "http://127.0.0.1:8787/alerts", timeout_s=2.5,
                                  max_attempts=3, headers={"X-Team": "fraud"})  # fmt: skip
    assert team.concurrency == 4 and team.backoff_max_s == 30.0
    assert routing.channels["log"] == FileChannel("log", "out.jsonl")


def test_segments_first_pattern_wins_and_the_rest_are_default() -> None:
    routing = parse_rules(RULES)
    assert routing.segment_of("cust_vip_1") == "vip"
    assert routing.segment_of("cust_0002") == "default"


def test_an_alert_no_rule_matches_goes_nowhere() -> None:
    routing = parse_rules(RULES.replace("  - channels: [log]\n", ""))
    assert routing.route(_alert()) == (None, ())


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (("severity: [HIGH, CRITICAL]", "severity: [HIGH, SEVERE]"),
         "rules.yaml:14: rules[0].match.severity: 'SEVERE' is not a severity "
         "(LOW, MEDIUM, HIGH, CRITICAL)"),
        (("channels: team\n", "channels: pager\n"),
         "rules.yaml:17: rules[1].channels: no channel 'pager' (channels: log, team)"),
        (("{segment: vip}", "{segment: gold}"),
         "rules.yaml:16: rules[1].match.segment: no segment 'gold' (segments: default, vip)"),
        (("type: file", "type: sms"),
         "rules.yaml:9: channels.log.type: unknown channel type 'sms'; expected webhook or file"),
        (("url: http://127.0.0.1:8787/alerts", "url: 127.0.0.1:8787"),
         "rules.yaml:4: channels.team.url: '127.0.0.1:8787' is not an http(s) URL with a host"),
        (("max_attempts: 3", "max_attempts: 0"),
         "rules.yaml:6: channels.team.max_attempts: must be 1 or more, not 0"),
        (("timeout_s: 2.5", "timeout_s: soon"),
         "rules.yaml:5: channels.team.timeout_s: must be a number"),
        (("    path: out.jsonl\n", "    path: out.jsonl\n    retries: 3\n"),
         "rules.yaml:11: channels.log.retries: unknown key; expected one of backoff_initial_s, "
         "backoff_max_s, concurrency, headers, max_attempts, path, timeout_s, type, url"),
        (("  - match: {segment: vip}", "  - when: {segment: vip}"),
         "rules.yaml:16: rules[1].when: unknown key; expected one of channels, match"),
        (("vip: [", "default: ["),
         "rules.yaml:12: segments.default: 'default' is every customer no segment matches: "
         "pick another name"),
        (("rules:\n", "rule:\n"),
         "rules.yaml:13: rule: unknown key; expected one of channels, rules, segments"),
    ],
)  # fmt: skip
def test_a_mistake_is_named_by_line_and_field(change: tuple[str, str], message: str) -> None:
    text = RULES.replace(*change)
    assert text != RULES, "the test's change did not apply"
    with pytest.raises(RulesError) as refused:
        parse_rules(text)
    assert str(refused.value) == message


def test_not_yaml_and_empty_and_missing_files_are_one_line(tmp_path: Path) -> None:
    with pytest.raises(RulesError, match=r"^rules\.yaml:3: not YAML: expected ',' or ']'"):
        parse_rules("channels:\n  - [unclosed\n")
    with pytest.raises(RulesError, match=r"^rules\.yaml: empty: it needs channels and rules$"):
        parse_rules("")
    with pytest.raises(RulesError, match=r"cannot read the notifier's rules file .*nope\.yaml"):
        load_rules(tmp_path / "nope.yaml")


def test_the_shipped_rules_file_loads() -> None:
    routing = load_rules(PROJECT_ROOT / "infra" / "notifier" / "rules.yaml")
    assert [c.name for c in routing.route(_alert(severity="CRITICAL"))[1]] == [
        "fraud-team", "audit-log"
    ]  # fmt: skip
    assert [c.name for c in routing.route(_alert())[1]] == ["audit-log"]


def test_severities_are_the_alert_schemas() -> None:
    schema = json.loads((PROJECT_ROOT / "schemas" / "alert" / "v1.avsc").read_text())
    severity = next(f for f in schema["fields"] if f["name"] == "severity")
    assert tuple(severity["type"]["symbols"]) == SEVERITIES


def test_channel_settings_take_environment_variables() -> None:
    text = (RULES.replace("http://127.0.0.1:8787/alerts", "http://${HOST}:${PORT}/alerts")
            .replace("{X-Team: fraud}", '{Authorization: "Bearer ${TOKEN}"}')
            .replace("path: out.jsonl", "path: ${HOME_DIR}/out.jsonl"))  # fmt: skip
    environ = {"HOST": "127.0.0.1", "PORT": "28787", "TOKEN": "s3cret", "HOME_DIR": "/var/lib"}
    routing = parse_rules(text, environ=environ)
    team = routing.channels["team"]
    assert isinstance(team, WebhookChannel)
    assert team.url == "http://127.0.0.1:28787/alerts"
    assert team.headers == {"Authorization": "Bearer s3cret"}
    assert routing.channels["log"] == FileChannel("log", "/var/lib/out.jsonl")
    with pytest.raises(RulesError) as refused:
        parse_rules(text, environ={k: v for k, v in environ.items() if k != "PORT"})
    assert str(refused.value) == (
        "rules.yaml:4: channels.team.url: ${PORT} is not set in the environment"
    )


def test_the_container_meshs_rules_follow_its_ports() -> None:
    """Both compose variants read one rules file; its webhook is wherever .env puts the receiver."""
    folder = PROJECT_ROOT / "infra" / "compose"
    environ = {"MESH_SERVICE_HOST": "host.docker.internal", "MESH_WEBHOOK_PORT": "40123"}
    routing = load_rules(folder / "notifier-rules.yaml", environ)
    team = routing.channels["fraud-team"]
    assert isinstance(team, WebhookChannel)
    assert team.url == "http://host.docker.internal:40123/alerts"
    for compose_file in ("docker-compose.yml", "docker-compose.bridge.yml"):
        text = (folder / compose_file).read_text()
        assert "notifier-rules.bridge.yaml" not in text
