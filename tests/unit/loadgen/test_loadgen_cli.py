"""``mesh produce``: options, one-line errors for bad ones, and a dry run end to end."""

from __future__ import annotations

import argparse
import dataclasses
import json
from pathlib import Path

import pytest

from control.cli import produce
from shared.errors import ConfigError
from shared.settings import Settings


def _parse(*argv: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="mesh")
    produce.register(parser.add_subparsers(dest="command", required=True))
    return parser.parse_args(["produce", *argv])


@pytest.fixture
def settings(tmp_path: Path) -> Settings:
    return Settings(home=tmp_path / "home")


def test_defaults_match_the_documented_ones() -> None:
    args = _parse()
    assert args.handler is produce.run
    assert (args.count, args.rate, args.seed, args.invalid_share) == (10_000, 0.0, 42, 0.02)
    assert args.types == "transactions,logins"
    assert args.topic_prefix == "raw"


@pytest.mark.parametrize(
    ("argv", "mentions"),
    [
        (("--count", "-5"), "--count"),
        (("--invalid-share", "1.5"), "--invalid-share"),
        (("--invalid-share", "-0.1"), "--invalid-share"),
        (("--fraud-share", "2"), "--fraud-share"),
        (("--invalid-share", "0.7", "--fraud-share", "0.5"), "exceeds 1"),
        (("--types", "transactions,payments"), "'payments'"),
        (("--types", ","), "--types"),
        (("--patterns", "large_amount,phishing"), "'phishing'"),
        (("--rate", "-1"), "--rate"),
        (("--topic-prefix", "raw topics"), "--topic-prefix"),
        (("--max-record-bytes", "10"), "--max-record-bytes"),
        (("--event-rate", "5000"), "--customers"),
    ],
)
def test_bad_arguments_raise_one_line_config_errors(
    argv: tuple[str, ...], mentions: str, settings: Settings
) -> None:
    args = _parse("--dry-run", "--no-progress", *argv)
    with pytest.raises(ConfigError) as caught:
        produce.run(args, settings)
    message = str(caught.value)
    assert mentions in message
    assert "\n" not in message


def test_dry_run_prints_counts_and_writes_ground_truth_under_mesh_home(
    settings: Settings, capsys: pytest.CaptureFixture[str]
) -> None:
    args = _parse("--dry-run", "--no-progress", "--count", "3000", "--seed", "9")
    assert produce.run(args, settings) == 0
    out = capsys.readouterr()
    assert "records/s" in out.out
    assert "raw.transactions=" in out.out and "raw.logins=" in out.out
    assert out.err == ""  # --no-progress: no bar
    truth = settings.home / "loadgen" / "ground-truth-seed9.jsonl"
    run = json.loads(truth.read_text().splitlines()[0])
    assert run["count"] == 3000 and run["seed"] == 9


def test_the_default_raw_topics_follow_the_mesh_prefix(
    settings: Settings, capsys: pytest.CaptureFixture[str]
) -> None:
    """Without --topic-prefix the records go to the mesh's raw topics, under MESH_TOPIC_PREFIX;
    a prefix given explicitly is taken as it is."""
    private = dataclasses.replace(settings, topic_prefix="mesh-1a2b.")
    args = _parse("--dry-run", "--no-progress", "--count", "100", "--seed", "7")
    assert produce.run(args, private) == 0
    truth = private.home / "loadgen" / "ground-truth-seed7.jsonl"
    topics = json.loads(truth.read_text().splitlines()[0])["topics"]
    assert topics == ["mesh-1a2b.raw.transactions", "mesh-1a2b.raw.logins"]
    args = _parse("--dry-run", "--no-progress", "--count", "100", "--seed", "8",
                  "--topic-prefix", "elsewhere")  # fmt: skip
    assert produce.run(args, private) == 0
    truth = private.home / "loadgen" / "ground-truth-seed8.jsonl"
    assert json.loads(truth.read_text().splitlines()[0])["topics"][0] == "elsewhere.transactions"


def test_stream_config_from_arguments_uses_the_fixed_start_time() -> None:
    args = _parse("--start-time", "1700000000000", "--types", "logins", "--patterns", "none")
    config = produce.stream_config(args)
    assert config.start_time_ms == 1_700_000_000_000
    assert config.types == ("logins",)
    assert config.patterns == ()


def test_without_start_time_an_unlimited_run_ends_about_now() -> None:
    args = _parse("--count", "2000")
    config = produce.stream_config(args, now_ms=10_000_000)
    assert config.start_time_ms == 10_000_000 - 2000 * 1000 // 200


def test_rate_limited_run_keeps_step_with_the_wall_clock() -> None:
    args = _parse("--count", "2000", "--rate", "50")
    config = produce.stream_config(args, now_ms=10_000_000)
    assert config.event_rate == 50
    assert config.start_time_ms == 10_000_000
