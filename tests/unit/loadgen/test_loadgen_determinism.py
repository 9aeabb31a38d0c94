"""Same seed, same bytes: the stream is a pure function of its configuration."""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
from collections.abc import Callable

from tools.loadgen import StreamConfig, generate

MakeConfig = Callable[..., StreamConfig]


def _messages(config: StreamConfig) -> list[tuple[str, bytes | None, bytes]]:
    return [(r.topic_suffix, r.key, r.value) for r in generate(config)]


def _digest(config: StreamConfig) -> str:
    digest = hashlib.sha256()
    for record in generate(config):
        digest.update(record.topic_suffix.encode() + (record.key or b"-") + record.value)
    return digest.hexdigest()


def test_same_seed_gives_byte_identical_stream(make_config: MakeConfig) -> None:
    first = _messages(make_config(seed=7, invalid_share=0.2, fraud_share=0.05))
    second = _messages(make_config(seed=7, invalid_share=0.2, fraud_share=0.05))
    assert first == second
    assert len(first) == 5_000


def test_different_seed_gives_different_stream(make_config: MakeConfig) -> None:
    first = _messages(make_config(seed=7))
    second = _messages(make_config(seed=8))
    assert len(first) == len(second)
    differing = sum(a != b for a, b in zip(first, second, strict=True))
    assert differing > 0.99 * len(first)


def test_start_time_shifts_event_times_and_nothing_else(make_config: MakeConfig) -> None:
    config = make_config(count=2_000)
    early = list(generate(config))
    late = list(generate(make_config(count=2_000, start_time_ms=config.start_time_ms + 3_600_000)))
    for a, b in zip(early, late, strict=True):
        assert (a.topic_suffix, a.key, a.meta.record_id) == (
            b.topic_suffix,
            b.key,
            b.meta.record_id,
        )
        if a.meta.event_time is not None:
            assert b.meta.event_time == a.meta.event_time + 3_600_000


def test_stream_does_not_depend_on_hash_randomisation(make_config: MakeConfig) -> None:
    config = make_config(count=3_000, invalid_share=0.2, fraud_share=0.05)
    code = (
        "import hashlib\n"
        "from tools.loadgen import StreamConfig, generate\n"
        f"config = StreamConfig(start_time_ms={config.start_time_ms}, count=3000, "
        "customers=5000, event_rate=50.0, invalid_share=0.2, fraud_share=0.05)\n"
        "digest = hashlib.sha256()\n"
        "for record in generate(config):\n"
        "    digest.update(record.topic_suffix.encode() + (record.key or b'-') + record.value)\n"
        "print(digest.hexdigest())\n"
    )
    digests = set()
    for hash_seed in ("1", "2"):
        env = {**os.environ, "PYTHONHASHSEED": hash_seed}
        out = subprocess.run(
            [sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True
        )
        digests.add(out.stdout.strip())
    assert digests == {_digest(config)}
